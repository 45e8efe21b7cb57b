package disk

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/pipeguard/pipeguard/agent/hostops/win32"
)

// Buffer sizes of the IOCTL_STORAGE_QUERY_PROPERTY queries: the first
// try, and the most a descriptor's Size may ask for. Page 0x83 holds at
// most 64 KiB of designators of at least 4 bytes each; as
// STORAGE_IDENTIFIER structures they grow by at most 16 bytes each, which
// stays under 1 MiB. A STORAGE_DEVICE_DESCRIPTOR holds four short strings
// and the device's raw properties.
const (
	deviceIDFirstTry   = 4 << 10
	maxDeviceIDSize    = 1 << 20
	descriptorFirstTry = 1 << 10
	maxDescriptorSize  = 64 << 10
)

// queryProperty asks disk for a storage property descriptor
// (IOCTL_STORAGE_QUERY_PROPERTY), first with first bytes and, when the
// descriptor's Size says it is larger, again with that size, up to limit.
// A short answer whose Size fits the buffer is returned as it is, for the
// parser to refuse.
func (n Native) queryProperty(ctx context.Context, disk, property uint32, first, limit int) ([]byte, error) {
	in := win32.StoragePropertyQuery(property, win32.PropertyStandardQuery)
	size := first
	for range 4 {
		out, err := n.ioctl(ctx, disk, win32.IOCTL_STORAGE_QUERY_PROPERTY, in, size)
		if err != nil {
			return nil, err
		}
		want, err := win32.DescriptorSize(out)
		if err != nil {
			return nil, err
		}
		switch {
		case int64(want) <= int64(len(out)) || int64(want) <= int64(size):
			return out, nil
		case int64(want) > int64(limit):
			return nil, fmt.Errorf("%s: the descriptor's Size %d exceeds the %d bytes a descriptor may take",
				win32.DeviceIoControlFunc(win32.IOCTL_STORAGE_QUERY_PROPERTY), want, limit)
		}
		size = int(want)
	}
	return nil, fmt.Errorf("%s: the descriptor's Size kept growing between calls", win32.DeviceIoControlFunc(win32.IOCTL_STORAGE_QUERY_PROPERTY))
}

// page83 returns disk's page 83 ID as CSI Proxy reports it (Page83ID of its
// STORAGE_DEVICE_ID_DESCRIPTOR); a disk that does not answer the query has
// none ("").
func (n Native) page83(ctx context.Context, disk uint32) (string, error) {
	buf, err := n.queryProperty(ctx, disk, win32.StorageDeviceIdProperty, deviceIDFirstTry, maxDeviceIDSize)
	if errors.Is(err, win32.ErrNotSupported) {
		return "", nil
	}
	if err != nil {
		return "", err
	}
	return Page83ID(buf)
}

// serial returns disk's serial number from its STORAGE_DEVICE_DESCRIPTOR,
// spaces trimmed; a disk that does not answer the query has none (""). Only
// the serial number is read of the descriptor.
func (n Native) serial(ctx context.Context, disk uint32) (string, error) {
	buf, err := n.queryProperty(ctx, disk, win32.StorageDeviceProperty, descriptorFirstTry, maxDescriptorSize)
	if errors.Is(err, win32.ErrNotSupported) {
		return "", nil
	}
	if err != nil {
		return "", err
	}
	d, err := win32.ParseStorageDeviceIdentity(buf)
	if err != nil {
		return "", err
	}
	return strings.TrimSpace(d.SerialNumber), nil
}

// ListDiskIDs returns every disk's page 83 ID and serial number, read
// with IOCTL_STORAGE_QUERY_PROPERTY (StorageDeviceIdProperty,
// StorageDeviceProperty). A disk that went away since it was listed is
// left out; so is a disk whose answer cannot be read, which is told to
// Skipped rather than reported with a guessed ID. The listing fails only
// when the disks cannot be listed, or a call runs out of time.
func (n Native) ListDiskIDs(ctx context.Context) (map[uint32]IDs, error) {
	const listing = "ListDiskIDs"
	drives, err := n.drives(ctx)
	if err != nil {
		return nil, fmt.Errorf("listing the disks: %w", err)
	}
	ids := map[uint32]IDs{}
	for _, d := range drives {
		id, ok, err := n.ids(ctx, d)
		if err != nil {
			if ended(ctx, err) {
				return nil, err
			}
			n.skip(listing, err)
			continue
		}
		if ok {
			ids[d] = id
		}
	}
	return ids, nil
}

// ids returns disk's IDs, false when it went away.
func (n Native) ids(ctx context.Context, disk uint32) (IDs, bool, error) {
	p83, err := n.page83(ctx, disk)
	if errors.Is(err, win32.ErrNotFound) {
		return IDs{}, false, nil
	}
	if err != nil {
		return IDs{}, false, fmt.Errorf("reading the page 83 ID of disk %d: %w", disk, err)
	}
	sn, err := n.serial(ctx, disk)
	if errors.Is(err, win32.ErrNotFound) {
		return IDs{}, false, nil
	}
	if err != nil {
		return IDs{}, false, fmt.Errorf("reading the serial number of disk %d: %w", disk, err)
	}
	return IDs{Page83: p83, SerialNumber: sn}, true, nil
}
