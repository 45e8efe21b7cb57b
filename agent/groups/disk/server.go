package disk

import (
	"context"
	"errors"
	"strconv"

	"github.com/go-logr/logr"

	"github.com/pipeguard/pipeguard/agent/apierr"
	"github.com/pipeguard/pipeguard/agent/confine"
	"github.com/pipeguard/pipeguard/agent/groups/inflight"
	hostdisk "github.com/pipeguard/pipeguard/agent/hostops/disk"
	"github.com/pipeguard/pipeguard/agent/server"
)

// Group is the API group name.
const Group = "disk"

// Keys of the identifiers map of v1beta1 and v1beta2.
const (
	idPage83       = "page83"
	idSerialNumber = "serialNumber"
)

// Server is the version-independent disk server. Disk operations carry no
// paths and no free text; their inputs are disk numbers.
type Server struct {
	// host is the host's disk operations, those that change a disk
	// holding it (held.go).
	host hostdisk.API
	ops  *inflight.Table
	// volumes, if set, tells a partitioned disk (WithVolumes).
	volumes Volumes
}

// New returns a Server.
func New(host hostdisk.API) (*Server, error) {
	if host == nil {
		return nil, errors.New("disk server needs host operations")
	}
	s := &Server{ops: inflight.New(Group, nil, logr.Discard())}
	s.host = heldDisks{API: host, s: s}
	return s, nil
}

// Endpoints returns every served disk API version.
func (s *Server) Endpoints() []server.Endpoint {
	return []server.Endpoint{
		{Group: Group, Version: "v1alpha1", Register: s.registerV1alpha1},
		{Group: Group, Version: "v1beta1", Register: s.registerV1beta1},
		{Group: Group, Version: "v1beta2", Register: s.registerV1beta2},
		{Group: Group, Version: "v1beta3", Register: s.registerV1beta3},
		{Group: Group, Version: "v1", Register: s.registerV1},
	}
}

// parseDiskID reads the disk number the older versions send as a string.
func parseDiskID(field, id string) (uint32, error) {
	n, err := strconv.ParseUint(id, 10, 32)
	if err != nil {
		return 0, apierr.Invalidf(field, "%s is not a disk number: send the decimal number of the disk, e.g. \"2\"", confine.Quote(id))
	}
	return uint32(n), nil
}

func diskKey(n uint32) string { return strconv.FormatUint(uint64(n), 10) }

// diskNumberByName finds the disk whose page 83 identifier is name.
func (s *Server) diskNumberByName(ctx context.Context, name string) (uint32, error) {
	ids, err := s.host.ListDiskIDs(ctx)
	if err != nil {
		return 0, err
	}
	for n, id := range ids {
		if id.Page83 != "" && id.Page83 == name {
			return n, nil
		}
	}
	return 0, errors.New("no disk has the page 83 identifier " + confine.Quote(name))
}
