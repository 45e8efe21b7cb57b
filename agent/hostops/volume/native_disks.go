package volume

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math"
	"slices"

	"github.com/pipeguard/pipeguard/agent/hostops/win32"
)

// extentsFirstTry is the number of extents room is made for at first: a
// basic volume has one.
const extentsFirstTry = 8

// extents returns where the volume whose device is device lies
// (IOCTL_VOLUME_GET_VOLUME_DISK_EXTENTS). A volume on more disks than the
// first buffer holds is asked again with room for the number it gave.
func (n Native) extents(ctx context.Context, device string) ([]win32.DiskExtent, error) {
	op := win32.DeviceIoControlFunc(win32.IOCTL_VOLUME_GET_VOLUME_DISK_EXTENTS)
	size := win32.VolumeDiskExtentsBufferSize(extentsFirstTry)
	for try := 0; ; try++ {
		out, err := win32.Call(ctx, n.Limits, op, func() ([]byte, error) {
			return n.Sys.DeviceIoControl(device, win32.IOCTL_VOLUME_GET_VOLUME_DISK_EXTENTS, nil, size)
		})
		if errors.Is(err, win32.ErrBufferTooSmall) && try == 0 {
			count, cerr := win32.NumberOfDiskExtents(out)
			if cerr != nil {
				return nil, fmt.Errorf("%w; the answer to the larger buffer asked for: %w", err, cerr)
			}
			if count > win32.MaxDiskExtents {
				return nil, fmt.Errorf("%s says the volume has %d disk extents, more than the %d a volume can have", op, count, win32.MaxDiskExtents)
			}
			size = win32.VolumeDiskExtentsBufferSize(int(count))
			continue
		}
		if errors.Is(err, win32.ErrBufferTooSmall) {
			return nil, fmt.Errorf("the volume's disk extents no longer fit in %d bytes, the size its first answer asked for (they changed between two calls; try again): %w", size, err)
		}
		if err != nil {
			return nil, err
		}
		return win32.ParseVolumeDiskExtents(out)
	}
}

// GetDiskNumberFromVolumeID returns the disk of the volume's first extent.
func (n Native) GetDiskNumberFromVolumeID(ctx context.Context, volumeID string) (uint32, error) {
	_, device, err := n.volumePaths(volumeID)
	if err != nil {
		return 0, err
	}
	ext, err := n.extents(ctx, device)
	if err != nil {
		return 0, fmt.Errorf("finding the disk of volume %s: %w", volumeID, err)
	}
	if len(ext) == 0 {
		return 0, fmt.Errorf("finding the disk of volume %s: Windows reports no disk extent for it, so it lies on no disk", volumeID)
	}
	return ext[0].DiskNumber, nil
}

// skippable tells whether a volume that failed a query while volumes are
// listed is one to leave out: it answers no disk extents (a DVD or network
// volume), has no medium, or went away since it was listed.
func skippable(err error) bool {
	return errors.Is(err, win32.ErrNotSupported) || errors.Is(err, win32.ErrNotReady) || errors.Is(err, win32.ErrNotFound)
}

// onDisk is a volume found on the disk asked for, with what orders it.
type onDisk struct {
	id        string
	partition uint32
	offset    int64
}

// ListVolumesOnDisk returns the volumes with an extent on disk and, for a
// partition other than 0, whose partition (IOCTL_STORAGE_GET_DEVICE_NUMBER)
// is that one, in partition order as Get-Partition lists them; volumes
// spanning disks, which have no partition number, come last. A volume
// whose answer cannot be read, or a listed name that is no volume, is left
// out and told to Skipped; the listing fails only when the volumes cannot
// be listed, or a call runs out of time.
func (n Native) ListVolumesOnDisk(ctx context.Context, disk, partition uint32) ([]string, error) {
	where := fmt.Sprintf("disk %d", disk)
	if partition != 0 {
		where = fmt.Sprintf("partition %d of disk %d", partition, disk)
	}
	vols, err := win32.Call(ctx, n.Limits, "FindFirstVolumeW", n.Sys.Volumes)
	if err != nil {
		return nil, fmt.Errorf("listing the volumes on %s: %w", where, err)
	}
	var found []onDisk
	for _, id := range vols {
		if !win32.IsVolumeName(id) {
			n.skip(fmt.Errorf("listing the volumes on %s: FindNextVolumeW listed %q, which is not a volume GUID path", where, id))
			continue
		}
		v, ok, err := n.volumeOnDisk(ctx, id, disk, partition)
		if err != nil {
			err = fmt.Errorf("listing the volumes on %s: volume %s: %w", where, id, err)
			if ctx.Err() != nil || errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
				return nil, err
			}
			n.skip(err)
			continue
		}
		if ok {
			found = append(found, v)
		}
	}
	slices.SortStableFunc(found, func(a, b onDisk) int {
		return cmp.Or(cmp.Compare(a.partition, b.partition), cmp.Compare(a.offset, b.offset))
	})
	out := make([]string, 0, len(found))
	for _, v := range found {
		out = append(out, win32.VolumeRoot(v.id))
	}
	return out, nil
}

// volumeOnDisk tells whether the volume id lies on disk (and partition,
// when not 0).
func (n Native) volumeOnDisk(ctx context.Context, id string, disk, partition uint32) (onDisk, bool, error) {
	device := win32.VolumeDevice(id)
	ext, err := n.extents(ctx, device)
	if skippable(err) {
		return onDisk{}, false, nil
	}
	if err != nil {
		return onDisk{}, false, err
	}
	i := slices.IndexFunc(ext, func(e win32.DiskExtent) bool { return e.DiskNumber == disk })
	if i < 0 {
		return onDisk{}, false, nil
	}
	v := onDisk{id: id, partition: math.MaxUint32, offset: ext[i].StartingOffset}
	op := win32.DeviceIoControlFunc(win32.IOCTL_STORAGE_GET_DEVICE_NUMBER)
	out, err := win32.Call(ctx, n.Limits, op, func() ([]byte, error) {
		return n.Sys.DeviceIoControl(device, win32.IOCTL_STORAGE_GET_DEVICE_NUMBER, nil, win32.StorageDeviceNumberSize)
	})
	switch {
	case skippable(err) && partition == 0:
		// A volume spanning disks has no partition number.
		return v, true, nil
	case skippable(err):
		return onDisk{}, false, nil
	case err != nil:
		return onDisk{}, false, err
	}
	num, err := win32.ParseStorageDeviceNumber(out)
	if err != nil {
		return onDisk{}, false, err
	}
	if num.DeviceNumber == disk {
		v.partition = num.PartitionNumber
	}
	if partition != 0 && (num.DeviceNumber != disk || num.PartitionNumber != partition) {
		return onDisk{}, false, nil
	}
	return v, true, nil
}

// skip tells Skipped of a volume left out of ListVolumesOnDisk.
func (n Native) skip(err error) {
	if n.Skipped != nil {
		n.Skipped("ListVolumesOnDisk", err)
	}
}
