package disk

import (
	"context"
	"fmt"

	"github.com/go-logr/logr"

	"github.com/pipeguard/pipeguard/agent/groups/inflight"
	hostdisk "github.com/pipeguard/pipeguard/agent/hostops/disk"
)

// The operations that change a disk run one at a time per disk:
// PartitionDisk (MSFT_Disk.Initialize, CreatePartition) and SetDiskState
// (MSFT_Disk.Online, Offline). A WMI method past its deadline may leave the
// storage provider working after the call returned, so the disk stays held until the
// operation's settle check says the provider is done: SetDiskState when
// GetDiskState answers the state asked for, PartitionDisk when the disk
// has a volume (WithVolumes: the volume group's ListVolumesOnDisk; the
// disk API lists no partitions), or for inflight.SettleTime without it.
// Rescan changes no one disk and reads never hold a disk.

// TrackOperations counts the refusals and releases of the disk group's
// held disks in m and logs the releases to log.
func (s *Server) TrackOperations(m *inflight.Metrics, log logr.Logger) *Server {
	s.ops = inflight.New(Group, m, log)
	return s
}

// Volumes lists the volumes of a disk, as the volume group's host
// operations do.
type Volumes interface {
	ListVolumesOnDisk(ctx context.Context, disk, partition uint32) ([]string, error)
}

// WithVolumes gives PartitionDisk its settle check: the disk has a volume,
// as v lists them.
func (s *Server) WithVolumes(v Volumes) *Server {
	s.volumes = v
	return s
}

// partitioned is PartitionDisk's settle check, nil without WithVolumes.
func (h heldDisks) partitioned(disk uint32) inflight.Check {
	v := h.s.volumes
	if v == nil {
		return nil
	}
	return func(ctx context.Context) (bool, error) {
		ids, err := v.ListVolumesOnDisk(ctx, disk, 0)
		if err != nil {
			return false, fmt.Errorf("listing the volumes of disk %d: %w", disk, err)
		}
		return len(ids) > 0, nil
	}
}

// heldDisks is the host's disk operations, those that change a disk
// holding it.
type heldDisks struct {
	hostdisk.API
	s *Server
}

func (h heldDisks) PartitionDisk(ctx context.Context, disk uint32) error {
	return h.held(ctx, disk, "PartitionDisk", h.partitioned(disk), func() error { return h.API.PartitionDisk(ctx, disk) })
}

func (h heldDisks) SetDiskState(ctx context.Context, disk uint32, online bool) error {
	return h.held(ctx, disk, "SetDiskState", h.inState(disk, online), func() error { return h.API.SetDiskState(ctx, disk, online) })
}

// held runs call, op of disk, holding the disk.
func (h heldDisks) held(ctx context.Context, disk uint32, op string, check inflight.Check, call func() error) error {
	return h.s.ops.Do(ctx, inflight.Disk(disk), op, check, call)
}

// inState is SetDiskState's settle check: the disk is online, or offline,
// as asked.
func (h heldDisks) inState(disk uint32, online bool) inflight.Check {
	return func(ctx context.Context) (bool, error) {
		got, err := h.API.GetDiskState(ctx, disk)
		if err != nil {
			return false, fmt.Errorf("reading the state of disk %d: %w", disk, err)
		}
		return got == online, nil
	}
}
