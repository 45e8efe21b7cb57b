package disk

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	"github.com/pipeguard/pipeguard/agent/hostops/runner"
	"github.com/pipeguard/pipeguard/agent/hostops/win32"
)

// Native is API through direct Win32 calls, as CSI Proxy 1.3 makes them:
// disk IOCTLs on \\.\PhysicalDriveN opened with no access rights for the
// queries (read access for IOCTL_DISK_GET_LENGTH_INFO, which asks for it).
// PartitionDisk, Rescan, SetDiskState and GetDiskState, which have no
// Win32 equivalent here, run through Cmdlets. Every Win32 call runs under
// Limits (runner.Call), named after its function, so that it has the
// group's deadline and concurrency cap and a hung call answers at the
// deadline.
type Native struct {
	// Sys makes the Win32 calls; win32.New() on the host.
	Sys win32.Sys
	// Limits bounds every Win32 call; nil runs them unbounded.
	Limits runner.Limiter
	// Cmdlets runs PartitionDisk, Rescan, SetDiskState and GetDiskState,
	// and nothing else: the PowerShell implementation.
	Cmdlets Cmdlets
}

var _ API = Native{}

// errNoSys is the answer of a Native assembled without its Sys.
var errNoSys = errors.New("internal error: the native disk operations have no Win32 host (Native.Sys is nil); the call was not run")

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
	if n.Sys == nil {
		return nil, errNoSys
	}
	return win32.Call(ctx, n.Limits, "QueryDosDeviceW", n.Sys.PhysicalDrives)
}

// ListDiskLocations returns the SCSI address of every disk that has one
// (IOCTL_SCSI_GET_ADDRESS), as Get-Disk's Location reads it: Adapter is
// the PortNumber, Bus the PathId, Target the TargetId, LUNID the Lun.
// Disks that do not answer (not on a SCSI port) are left out, as CSI
// Proxy does; a disk whose answer is malformed fails the listing, as its
// location cannot be trusted to tell it from another.
func (n Native) ListDiskLocations(ctx context.Context) (map[uint32]Location, error) {
	drives, err := n.drives(ctx)
	if err != nil {
		return nil, fmt.Errorf("listing the disks: %w", err)
	}
	locs := map[uint32]Location{}
	for _, d := range drives {
		out, err := n.ioctl(ctx, d, win32.IOCTL_SCSI_GET_ADDRESS, nil, win32.SCSIAddressSize)
		if gone(err) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("reading the location of disk %d: %w", d, err)
		}
		a, err := win32.ParseSCSIAddress(out)
		if err != nil {
			return nil, fmt.Errorf("reading the location of disk %d: %w", d, err)
		}
		locs[d] = Location{Adapter: u8(a.PortNumber), Bus: u8(a.PathId), Target: u8(a.TargetId), LUNID: u8(a.Lun)}
	}
	return locs, nil
}

func u8(v uint8) string { return strconv.Itoa(int(v)) }

// GetDiskStats returns the disk's size in bytes (IOCTL_DISK_GET_LENGTH_INFO).
func (n Native) GetDiskStats(ctx context.Context, disk uint32) (int64, error) {
	if n.Sys == nil {
		return 0, errNoSys
	}
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
	if n.Cmdlets == nil {
		return errNoCmdlets("PartitionDisk")
	}
	return n.Cmdlets.PartitionDisk(ctx, disk)
}

// Rescan runs Cmdlets' Rescan.
func (n Native) Rescan(ctx context.Context) error {
	if n.Cmdlets == nil {
		return errNoCmdlets("Rescan")
	}
	return n.Cmdlets.Rescan(ctx)
}

// SetDiskState runs Cmdlets' SetDiskState.
func (n Native) SetDiskState(ctx context.Context, disk uint32, online bool) error {
	if n.Cmdlets == nil {
		return errNoCmdlets("SetDiskState")
	}
	return n.Cmdlets.SetDiskState(ctx, disk, online)
}

// GetDiskState runs Cmdlets' GetDiskState.
func (n Native) GetDiskState(ctx context.Context, disk uint32) (bool, error) {
	if n.Cmdlets == nil {
		return false, errNoCmdlets("GetDiskState")
	}
	return n.Cmdlets.GetDiskState(ctx, disk)
}

func errNoCmdlets(op string) error {
	return fmt.Errorf("internal error: %s needs the PowerShell disk operations (Native.Cmdlets is nil); the call was not run", op)
}
