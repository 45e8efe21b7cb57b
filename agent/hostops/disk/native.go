package disk

import (
	"context"
	"errors"
	"fmt"

	"github.com/pipeguard/pipeguard/agent/hostops"
	"github.com/pipeguard/pipeguard/agent/hostops/limits"
	"github.com/pipeguard/pipeguard/agent/hostops/win32"
)

// Native is API through direct Win32 calls, as CSI Proxy 1.3 makes them:
// disk IOCTLs on \\.\PhysicalDriveN opened with no access rights for the
// queries (read access for IOCTL_DISK_GET_LENGTH_INFO, which asks for it).
// PartitionDisk, Rescan, SetDiskState and GetDiskState, which have no
// Win32 equivalent here, run through Cmdlets. Every Win32 call runs under
// Limits (limits.Call), named after its function, so that it has the
// group's deadline and concurrency cap and a hung call answers at the
// deadline.
// Build it with New, which checks that it has what it needs.
type Native struct{ deps }

type deps = Deps

// Deps are what the native disk operations are made of.
type Deps struct {
	// Sys makes the Win32 calls; win32.New() on the host.
	Sys win32.Sys
	// Limits bounds every Win32 call; nil runs them unbounded.
	Limits limits.Limiter
	// Cmdlets runs PartitionDisk, Rescan, SetDiskState and GetDiskState,
	// and nothing else: WMI on the host.
	Cmdlets Cmdlets
	// Skipped, when set, is told of each disk a listing leaves out because
	// its answer could not be read: the listing ("ListDiskLocations",
	// "ListDiskIDs") and the error, which names the disk. The agent logs
	// and counts them.
	Skipped func(listing string, err error)
}

// New returns the native disk operations over d. Sys and Cmdlets are
// required: without them New answers an internal error naming what is
// missing, once, as the agent is assembled, and no call is ever made.
func New(d Deps) (Native, error) {
	if err := hostops.Assembled("disk", hostops.Dep{Present: d.Sys != nil, Name: "a Win32 host (Deps.Sys)"},
		hostops.Dep{Present: d.Cmdlets != nil, Name: "the WMI disk operations (Deps.Cmdlets, for PartitionDisk, Rescan, SetDiskState and GetDiskState)"}); err != nil {
		return Native{}, err
	}
	return Native{deps: d}, nil
}

var _ API = Native{}

// gone tells whether a drive that failed a query while drives are listed
// is one to leave out: it does not answer that query (a disk on no SCSI
// port), or went away since it was listed.
func gone(err error) bool {
	return errors.Is(err, win32.ErrNotSupported) || errors.Is(err, win32.ErrNotFound)
}

// ioctl sends code to disk's device under the limits.
func (n Native) ioctl(ctx context.Context, disk, code uint32, in []byte, outSize int) ([]byte, error) {
	device := win32.PhysicalDrive(disk)
	return win32.Call(ctx, n.Limits, win32.DeviceIoControlFunc(code), func() ([]byte, error) {
		return n.Sys.DeviceIoControl(device, code, in, outSize)
	})
}

// drives lists the physical drives.
func (n Native) drives(ctx context.Context) ([]uint32, error) {
	return win32.Call(ctx, n.Limits, "QueryDosDeviceW", n.Sys.PhysicalDrives)
}

// ListDiskLocations returns the location of every disk CSI Proxy lists,
// as it reports it: the disk's bus type (IOCTL_STORAGE_QUERY_PROPERTY,
// StorageDeviceProperty) decides whether it is listed and which fields of
// its SCSI address (IOCTL_SCSI_GET_ADDRESS) are reported (locationRules);
// Bus is never set. Disks that answer neither query (none on a SCSI port)
// or went away are left out, as CSI Proxy leaves them out. A disk whose
// answer cannot be read is left out too and told to Skipped; the listing
// fails only when the disks cannot be listed, or a call runs out of time.
func (n Native) ListDiskLocations(ctx context.Context) (map[uint32]Location, error) {
	const listing = "ListDiskLocations"
	drives, err := n.drives(ctx)
	if err != nil {
		return nil, fmt.Errorf("listing the disks: %w", err)
	}
	locs := map[uint32]Location{}
	for _, d := range drives {
		loc, ok, err := n.location(ctx, d)
		if err != nil {
			err = fmt.Errorf("reading the location of disk %d: %w", d, err)
			if ended(ctx, err) {
				return nil, err
			}
			n.skip(listing, err)
			continue
		}
		if ok {
			locs[d] = loc
		}
	}
	return locs, nil
}

// location returns the location CSI Proxy reports for disk, false when it
// lists none.
func (n Native) location(ctx context.Context, disk uint32) (Location, bool, error) {
	desc, err := n.queryProperty(ctx, disk, win32.StorageDeviceProperty, descriptorFirstTry, maxDescriptorSize)
	if gone(err) {
		return Location{}, false, nil
	}
	if err != nil {
		return Location{}, false, err
	}
	id, err := win32.ParseStorageDeviceIdentity(desc)
	if err != nil {
		return Location{}, false, err
	}
	if locationRules[id.BusType] == notListed {
		return Location{}, false, nil
	}
	out, err := n.ioctl(ctx, disk, win32.IOCTL_SCSI_GET_ADDRESS, nil, win32.SCSIAddressSize)
	if gone(err) {
		return Location{}, false, nil
	}
	if err != nil {
		return Location{}, false, err
	}
	a, err := win32.ParseSCSIAddress(out)
	if err != nil {
		return Location{}, false, err
	}
	loc, ok := reportedLocation(id.BusType, a)
	return loc, ok, nil
}

// ended tells whether err is the end of the call's time (its deadline, or
// the caller giving up), after which no other disk can be read either.
func ended(ctx context.Context, err error) bool {
	return ctx.Err() != nil || errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled)
}

// skip tells Skipped of a disk left out of listing.
func (n Native) skip(listing string, err error) {
	if n.Skipped != nil {
		n.Skipped(listing, err)
	}
}

// GetDiskStats returns the disk's size in bytes (IOCTL_DISK_GET_LENGTH_INFO).
func (n Native) GetDiskStats(ctx context.Context, disk uint32) (int64, error) {
	out, err := n.ioctl(ctx, disk, win32.IOCTL_DISK_GET_LENGTH_INFO, nil, win32.GetLengthInformationSize)
	if err != nil {
		return 0, fmt.Errorf("reading the size of disk %d: %w", disk, err)
	}
	size, err := win32.ParseLengthInformation(out)
	if err != nil {
		return 0, fmt.Errorf("reading the size of disk %d: %w", disk, err)
	}
	return size, nil
}

// PartitionDisk runs Cmdlets' PartitionDisk.
func (n Native) PartitionDisk(ctx context.Context, disk uint32) error {
	return n.Cmdlets.PartitionDisk(ctx, disk)
}

// Rescan runs Cmdlets' Rescan.
func (n Native) Rescan(ctx context.Context) error {
	return n.Cmdlets.Rescan(ctx)
}

// SetDiskState runs Cmdlets' SetDiskState.
func (n Native) SetDiskState(ctx context.Context, disk uint32, online bool) error {
	return n.Cmdlets.SetDiskState(ctx, disk, online)
}

// GetDiskState runs Cmdlets' GetDiskState.
func (n Native) GetDiskState(ctx context.Context, disk uint32) (bool, error) {
	return n.Cmdlets.GetDiskState(ctx, disk)
}
