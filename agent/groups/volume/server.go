package volume

import (
	"context"
	"errors"
	"fmt"

	"github.com/go-logr/logr"

	"github.com/pipeguard/pipeguard/agent/apierr"
	"github.com/pipeguard/pipeguard/agent/confine"
	"github.com/pipeguard/pipeguard/agent/groups/inflight"
	"github.com/pipeguard/pipeguard/agent/groups/validate"
	hostvol "github.com/pipeguard/pipeguard/agent/hostops/volume"
	"github.com/pipeguard/pipeguard/agent/methods"
	"github.com/pipeguard/pipeguard/agent/server"
)

// Group is the API group name.
const Group = "volume"

// Server is the version-independent volume server. Methods take the request
// field names of the calling version so that refusals name the right field.
type Server struct {
	host hostvol.API
	conf *confine.Confiner
	// ops holds each volume's storage operation in progress (held.go).
	ops *inflight.Table
}

// New returns a Server.
func New(host hostvol.API, conf *confine.Confiner) (*Server, error) {
	if host == nil || conf == nil {
		return nil, errors.New("volume server needs host operations and a confiner")
	}
	return &Server{host: host, conf: conf, ops: inflight.New(Group, nil, logr.Discard())}, nil
}

// Endpoints returns every served volume API version.
func (s *Server) Endpoints() []server.Endpoint {
	return []server.Endpoint{
		{Group: Group, Version: "v1alpha1", Register: s.registerV1alpha1},
		{Group: Group, Version: "v1beta1", Register: s.registerV1beta1},
		{Group: Group, Version: "v1beta2", Register: s.registerV1beta2},
		{Group: Group, Version: "v1beta3", Register: s.registerV1beta3},
		{Group: Group, Version: "v1", Register: s.registerV1},
		{Group: Group, Version: "v2alpha1", Register: s.registerV2alpha1},
	}
}

const fieldVolumeID = "volume_id"

// The table entries of the operations with path fields, whose names differ
// between versions (package methods).
var (
	mountVolume               = methods.MustLookup(Group, "MountVolume")
	unmountVolume             = methods.MustLookup(Group, "UnmountVolume")
	getVolumeIDFromTargetPath = methods.MustLookup(Group, "GetVolumeIDFromTargetPath")
	closestVolumeTargetPath   = methods.MustPath(Group, "GetClosestVolumeIDFromTargetPath", "target_path")
)

func (s *Server) mountArgs(m *methods.Method, volumeID, pathField, path string) (string, error) {
	if err := validate.VolumeID(fieldVolumeID, volumeID); err != nil {
		return "", err
	}
	return m.Final(s.conf, pathField, path)
}

// MountVolume mounts the volume at path.
func (s *Server) MountVolume(ctx context.Context, volumeID, pathField, path string) error {
	p, err := s.mountArgs(mountVolume, volumeID, pathField, path)
	if err != nil {
		return err
	}
	if err := s.refuseMountAt(ctx, pathField, path, p); err != nil {
		return err
	}
	if err := s.refuseProtectedVolume(ctx, "MountVolume", volumeID); err != nil {
		return err
	}
	return s.held(ctx, volumeID, "MountVolume", nil, func() error { return s.host.MountVolume(ctx, volumeID, p) })
}

// UnmountVolume flushes and unmounts the volume from path.
func (s *Server) UnmountVolume(ctx context.Context, volumeID, pathField, path string) error {
	p, err := s.mountArgs(unmountVolume, volumeID, pathField, path)
	if err != nil {
		return err
	}
	// A mount point is removed on the terms it is placed on: a caller in
	// a pod cannot take a volume away from another pod's directory.
	if err := s.refuseMountAt(ctx, pathField, path, p); err != nil {
		return err
	}
	return s.held(ctx, volumeID, "UnmountVolume", nil, func() error { return s.host.UnmountVolume(ctx, volumeID, p) })
}

// IsVolumeFormatted reports whether the volume has a file system.
func (s *Server) IsVolumeFormatted(ctx context.Context, volumeID string) (bool, error) {
	if err := validate.VolumeID(fieldVolumeID, volumeID); err != nil {
		return false, err
	}
	return s.host.IsVolumeFormatted(ctx, volumeID)
}

// FormatVolume formats the volume as NTFS. The volumes the node stands on
// are refused (rule protected-volume), as for MountVolume.
func (s *Server) FormatVolume(ctx context.Context, volumeID string) error {
	if err := validate.VolumeID(fieldVolumeID, volumeID); err != nil {
		return err
	}
	if err := s.refuseProtectedVolume(ctx, "FormatVolume", volumeID); err != nil {
		return err
	}
	return s.held(ctx, volumeID, "FormatVolume", s.formatted(volumeID), func() error { return s.host.FormatVolume(ctx, volumeID) })
}

// ResizeVolume grows the volume to size bytes, or as far as possible for 0.
func (s *Server) ResizeVolume(ctx context.Context, volumeID, sizeField string, size int64) error {
	if err := validate.VolumeID(fieldVolumeID, volumeID); err != nil {
		return err
	}
	if size < 0 {
		return apierr.Invalidf(sizeField, "is %d: give the new size in bytes, or 0 for the largest size", size)
	}
	return s.held(ctx, volumeID, "ResizeVolume", nil, func() error { return s.host.ResizeVolume(ctx, volumeID, size) })
}

// GetVolumeStats returns total and used bytes.
func (s *Server) GetVolumeStats(ctx context.Context, volumeID string) (int64, int64, error) {
	if err := validate.VolumeID(fieldVolumeID, volumeID); err != nil {
		return 0, 0, err
	}
	return s.host.GetVolumeStats(ctx, volumeID)
}

// GetDiskNumberFromVolumeID returns the disk holding the volume.
func (s *Server) GetDiskNumberFromVolumeID(ctx context.Context, volumeID string) (uint32, error) {
	if err := validate.VolumeID(fieldVolumeID, volumeID); err != nil {
		return 0, err
	}
	return s.host.GetDiskNumberFromVolumeID(ctx, volumeID)
}

// maxTargetLinks bounds the links GetVolumeIDFromTargetPath follows.
const maxTargetLinks = 8

// GetVolumeIDFromTargetPath returns the volume mounted at path. Like CSI
// Proxy it follows a path that links to another path (a publish path linking
// to the staging mount) to the volume at the end, but only while each link
// leads to a path inside the allowed roots: a link leaving them is refused
// as a symlink escape of path, and a link to anything but a local path (an
// SMB share) answers that path is not a volume.
func (s *Server) GetVolumeIDFromTargetPath(ctx context.Context, pathField, path string) (string, error) {
	p, err := getVolumeIDFromTargetPath.Final(s.conf, pathField, path)
	if err != nil {
		return "", err
	}
	for hops := 0; ; hops++ {
		id, err := s.host.GetVolumeIDFromTargetPath(ctx, p)
		var link *hostvol.LinkError
		if !errors.As(err, &link) {
			return id, err
		}
		if hops == maxTargetLinks {
			return "", fmt.Errorf("%s: more than %d links to follow to a volume", confine.Quote(path), maxTargetLinks)
		}
		// The link target is itself read as a name, like path.
		next, ferr := getVolumeIDFromTargetPath.Final(s.conf, pathField, link.Target)
		var ref *confine.Refusal
		switch {
		case errors.As(ferr, &ref) && ref.Rule.Malformed():
			return "", err
		case errors.As(ferr, &ref):
			return "", &confine.Refusal{Rule: confine.RuleSymlinkEscape, Field: pathField, Path: path,
				Reason: fmt.Sprintf("links to %s, which %s", confine.Quote(link.Target), ref.Reason)}
		case ferr != nil:
			return "", ferr
		}
		p = next
	}
}

// GetClosestVolumeIDFromTargetPath returns the volume nearest to path.
func (s *Server) GetClosestVolumeIDFromTargetPath(ctx context.Context, path string) (string, error) {
	p, err := closestVolumeTargetPath.Check(s.conf, path)
	if err != nil {
		return "", err
	}
	return s.host.GetClosestVolumeIDFromTargetPath(ctx, p)
}

// WriteVolumeCache flushes the volume's cache.
func (s *Server) WriteVolumeCache(ctx context.Context, volumeID string) error {
	if err := validate.VolumeID(fieldVolumeID, volumeID); err != nil {
		return err
	}
	return s.host.WriteVolumeCache(ctx, volumeID)
}

// ListVolumesOnDisk lists the volumes of a disk, or of one of its partitions.
func (s *Server) ListVolumesOnDisk(ctx context.Context, disk, partition uint32) ([]string, error) {
	return s.host.ListVolumesOnDisk(ctx, disk, partition)
}
