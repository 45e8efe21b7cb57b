package volume

// Adapters for v1alpha1, v1beta1 and v1beta2, which send disk numbers as
// strings and name the mount path path (or mount).

import (
	"context"
	"strconv"

	volv1alpha1 "github.com/kubernetes-csi/csi-proxy/client/api/volume/v1alpha1"
	volv1beta1 "github.com/kubernetes-csi/csi-proxy/client/api/volume/v1beta1"
	volv1beta2 "github.com/kubernetes-csi/csi-proxy/client/api/volume/v1beta2"
	"google.golang.org/grpc"

	"github.com/pipeguard/pipeguard/agent/apierr"
	"github.com/pipeguard/pipeguard/agent/confine"
)

// serverV1alpha1 adapts volume v1alpha1 to the internal server.
type serverV1alpha1 struct{ s *Server }

func (s *Server) registerV1alpha1(g *grpc.Server) {
	volv1alpha1.RegisterVolumeServer(g, serverV1alpha1{s})
}

func (x serverV1alpha1) IsVolumeFormatted(ctx context.Context, r *volv1alpha1.IsVolumeFormattedRequest) (*volv1alpha1.IsVolumeFormattedResponse, error) {
	ok, err := x.s.IsVolumeFormatted(ctx, r.GetVolumeId())
	if err != nil {
		return nil, err
	}
	return &volv1alpha1.IsVolumeFormattedResponse{Formatted: ok}, nil
}

func (x serverV1alpha1) FormatVolume(ctx context.Context, r *volv1alpha1.FormatVolumeRequest) (*volv1alpha1.FormatVolumeResponse, error) {
	if err := x.s.FormatVolume(ctx, r.GetVolumeId()); err != nil {
		return nil, err
	}
	return &volv1alpha1.FormatVolumeResponse{}, nil
}

func (x serverV1alpha1) ListVolumesOnDisk(ctx context.Context, r *volv1alpha1.ListVolumesOnDiskRequest) (*volv1alpha1.ListVolumesOnDiskResponse, error) {
	n, err := parseDiskID(r.GetDiskId())
	if err != nil {
		return nil, err
	}
	ids, err := x.s.ListVolumesOnDisk(ctx, n, 0)
	if err != nil {
		return nil, err
	}
	return &volv1alpha1.ListVolumesOnDiskResponse{VolumeIds: ids}, nil
}

func (x serverV1alpha1) MountVolume(ctx context.Context, r *volv1alpha1.MountVolumeRequest) (*volv1alpha1.MountVolumeResponse, error) {
	if err := x.s.MountVolume(ctx, r.GetVolumeId(), "path", r.GetPath()); err != nil {
		return nil, err
	}
	return &volv1alpha1.MountVolumeResponse{}, nil
}

func (x serverV1alpha1) DismountVolume(ctx context.Context, r *volv1alpha1.DismountVolumeRequest) (*volv1alpha1.DismountVolumeResponse, error) {
	if err := x.s.UnmountVolume(ctx, r.GetVolumeId(), "path", r.GetPath()); err != nil {
		return nil, err
	}
	return &volv1alpha1.DismountVolumeResponse{}, nil
}

func (x serverV1alpha1) ResizeVolume(ctx context.Context, r *volv1alpha1.ResizeVolumeRequest) (*volv1alpha1.ResizeVolumeResponse, error) {
	if err := x.s.ResizeVolume(ctx, r.GetVolumeId(), "size", r.GetSize()); err != nil {
		return nil, err
	}
	return &volv1alpha1.ResizeVolumeResponse{}, nil
}

// serverV1beta1 adapts volume v1beta1 to the internal server.
type serverV1beta1 struct{ s *Server }

func (s *Server) registerV1beta1(g *grpc.Server) {
	volv1beta1.RegisterVolumeServer(g, serverV1beta1{s})
}

func (x serverV1beta1) IsVolumeFormatted(ctx context.Context, r *volv1beta1.IsVolumeFormattedRequest) (*volv1beta1.IsVolumeFormattedResponse, error) {
	ok, err := x.s.IsVolumeFormatted(ctx, r.GetVolumeId())
	if err != nil {
		return nil, err
	}
	return &volv1beta1.IsVolumeFormattedResponse{Formatted: ok}, nil
}

func (x serverV1beta1) FormatVolume(ctx context.Context, r *volv1beta1.FormatVolumeRequest) (*volv1beta1.FormatVolumeResponse, error) {
	if err := x.s.FormatVolume(ctx, r.GetVolumeId()); err != nil {
		return nil, err
	}
	return &volv1beta1.FormatVolumeResponse{}, nil
}

func (x serverV1beta1) ListVolumesOnDisk(ctx context.Context, r *volv1beta1.ListVolumesOnDiskRequest) (*volv1beta1.ListVolumesOnDiskResponse, error) {
	n, err := parseDiskID(r.GetDiskId())
	if err != nil {
		return nil, err
	}
	ids, err := x.s.ListVolumesOnDisk(ctx, n, 0)
	if err != nil {
		return nil, err
	}
	return &volv1beta1.ListVolumesOnDiskResponse{VolumeIds: ids}, nil
}

func (x serverV1beta1) MountVolume(ctx context.Context, r *volv1beta1.MountVolumeRequest) (*volv1beta1.MountVolumeResponse, error) {
	if err := x.s.MountVolume(ctx, r.GetVolumeId(), "path", r.GetPath()); err != nil {
		return nil, err
	}
	return &volv1beta1.MountVolumeResponse{}, nil
}

func (x serverV1beta1) DismountVolume(ctx context.Context, r *volv1beta1.DismountVolumeRequest) (*volv1beta1.DismountVolumeResponse, error) {
	if err := x.s.UnmountVolume(ctx, r.GetVolumeId(), "path", r.GetPath()); err != nil {
		return nil, err
	}
	return &volv1beta1.DismountVolumeResponse{}, nil
}

func (x serverV1beta1) ResizeVolume(ctx context.Context, r *volv1beta1.ResizeVolumeRequest) (*volv1beta1.ResizeVolumeResponse, error) {
	if err := x.s.ResizeVolume(ctx, r.GetVolumeId(), "size", r.GetSize()); err != nil {
		return nil, err
	}
	return &volv1beta1.ResizeVolumeResponse{}, nil
}

func (x serverV1beta1) VolumeStats(ctx context.Context, r *volv1beta1.VolumeStatsRequest) (*volv1beta1.VolumeStatsResponse, error) {
	total, used, err := x.s.GetVolumeStats(ctx, r.GetVolumeId())
	if err != nil {
		return nil, err
	}
	return &volv1beta1.VolumeStatsResponse{VolumeSize: total, VolumeUsedSize: used}, nil
}

func (x serverV1beta1) GetVolumeDiskNumber(ctx context.Context, r *volv1beta1.VolumeDiskNumberRequest) (*volv1beta1.VolumeDiskNumberResponse, error) {
	n, err := x.s.GetDiskNumberFromVolumeID(ctx, r.GetVolumeId())
	if err != nil {
		return nil, err
	}
	return &volv1beta1.VolumeDiskNumberResponse{DiskNumber: int64(n)}, nil
}

func (x serverV1beta1) GetVolumeIDFromMount(ctx context.Context, r *volv1beta1.VolumeIDFromMountRequest) (*volv1beta1.VolumeIDFromMountResponse, error) {
	id, err := x.s.GetVolumeIDFromTargetPath(ctx, "mount", r.GetMount())
	if err != nil {
		return nil, err
	}
	return &volv1beta1.VolumeIDFromMountResponse{VolumeId: id}, nil
}

// serverV1beta2 adapts volume v1beta2 to the internal server.
type serverV1beta2 struct{ s *Server }

func (s *Server) registerV1beta2(g *grpc.Server) {
	volv1beta2.RegisterVolumeServer(g, serverV1beta2{s})
}

func (x serverV1beta2) IsVolumeFormatted(ctx context.Context, r *volv1beta2.IsVolumeFormattedRequest) (*volv1beta2.IsVolumeFormattedResponse, error) {
	ok, err := x.s.IsVolumeFormatted(ctx, r.GetVolumeId())
	if err != nil {
		return nil, err
	}
	return &volv1beta2.IsVolumeFormattedResponse{Formatted: ok}, nil
}

func (x serverV1beta2) FormatVolume(ctx context.Context, r *volv1beta2.FormatVolumeRequest) (*volv1beta2.FormatVolumeResponse, error) {
	if err := x.s.FormatVolume(ctx, r.GetVolumeId()); err != nil {
		return nil, err
	}
	return &volv1beta2.FormatVolumeResponse{}, nil
}

func (x serverV1beta2) ListVolumesOnDisk(ctx context.Context, r *volv1beta2.ListVolumesOnDiskRequest) (*volv1beta2.ListVolumesOnDiskResponse, error) {
	n, err := parseDiskID(r.GetDiskId())
	if err != nil {
		return nil, err
	}
	ids, err := x.s.ListVolumesOnDisk(ctx, n, 0)
	if err != nil {
		return nil, err
	}
	return &volv1beta2.ListVolumesOnDiskResponse{VolumeIds: ids}, nil
}

func (x serverV1beta2) MountVolume(ctx context.Context, r *volv1beta2.MountVolumeRequest) (*volv1beta2.MountVolumeResponse, error) {
	if err := x.s.MountVolume(ctx, r.GetVolumeId(), "path", r.GetPath()); err != nil {
		return nil, err
	}
	return &volv1beta2.MountVolumeResponse{}, nil
}

func (x serverV1beta2) DismountVolume(ctx context.Context, r *volv1beta2.DismountVolumeRequest) (*volv1beta2.DismountVolumeResponse, error) {
	if err := x.s.UnmountVolume(ctx, r.GetVolumeId(), "path", r.GetPath()); err != nil {
		return nil, err
	}
	return &volv1beta2.DismountVolumeResponse{}, nil
}

func (x serverV1beta2) ResizeVolume(ctx context.Context, r *volv1beta2.ResizeVolumeRequest) (*volv1beta2.ResizeVolumeResponse, error) {
	if err := x.s.ResizeVolume(ctx, r.GetVolumeId(), "size", r.GetSize()); err != nil {
		return nil, err
	}
	return &volv1beta2.ResizeVolumeResponse{}, nil
}

func (x serverV1beta2) VolumeStats(ctx context.Context, r *volv1beta2.VolumeStatsRequest) (*volv1beta2.VolumeStatsResponse, error) {
	total, used, err := x.s.GetVolumeStats(ctx, r.GetVolumeId())
	if err != nil {
		return nil, err
	}
	return &volv1beta2.VolumeStatsResponse{VolumeSize: total, VolumeUsedSize: used}, nil
}

func (x serverV1beta2) GetVolumeDiskNumber(ctx context.Context, r *volv1beta2.VolumeDiskNumberRequest) (*volv1beta2.VolumeDiskNumberResponse, error) {
	n, err := x.s.GetDiskNumberFromVolumeID(ctx, r.GetVolumeId())
	if err != nil {
		return nil, err
	}
	return &volv1beta2.VolumeDiskNumberResponse{DiskNumber: int64(n)}, nil
}

func (x serverV1beta2) GetVolumeIDFromMount(ctx context.Context, r *volv1beta2.VolumeIDFromMountRequest) (*volv1beta2.VolumeIDFromMountResponse, error) {
	id, err := x.s.GetVolumeIDFromTargetPath(ctx, "mount", r.GetMount())
	if err != nil {
		return nil, err
	}
	return &volv1beta2.VolumeIDFromMountResponse{VolumeId: id}, nil
}

func (x serverV1beta2) WriteVolumeCache(ctx context.Context, r *volv1beta2.WriteVolumeCacheRequest) (*volv1beta2.WriteVolumeCacheResponse, error) {
	if err := x.s.WriteVolumeCache(ctx, r.GetVolumeId()); err != nil {
		return nil, err
	}
	return &volv1beta2.WriteVolumeCacheResponse{}, nil
}

// parseDiskID reads the disk number the older versions send as a string.
func parseDiskID(id string) (uint32, error) {
	n, err := strconv.ParseUint(id, 10, 32)
	if err != nil {
		return 0, apierr.Invalidf("disk_id", "%s is not a disk number: send the decimal number of the disk, e.g. \"2\"", confine.Quote(id))
	}
	return uint32(n), nil
}
