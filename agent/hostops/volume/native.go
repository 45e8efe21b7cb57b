package volume

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"

	"github.com/pipeguard/pipeguard/agent/hostops"
	"github.com/pipeguard/pipeguard/agent/hostops/limits"
	"github.com/pipeguard/pipeguard/agent/hostops/win32"
)

// Native is API through direct Win32 calls, as CSI Proxy 1.3 makes them:
// only FormatVolume and ResizeVolume, which have no Win32 equivalent,
// start a process (through Cmdlets). Every Win32 call runs under Limits
// (limits.Call), named after its function, so that it has the group's
// deadline and concurrency cap and a hung call answers at the deadline.
// Build it with New, which checks that it has what it needs.
type Native struct{ deps }

type deps = Deps

// Deps are what the native volume operations are made of.
type Deps struct {
	// Sys makes the Win32 calls; win32.New() on the host.
	Sys win32.Sys
	// Limits bounds every Win32 call; nil runs them unbounded.
	Limits limits.Limiter
	// Cmdlets runs FormatVolume and ResizeVolume, and nothing else: WMI
	// on the host.
	Cmdlets Cmdlets
	// Skipped, when set, is told of each volume ListVolumesOnDisk leaves
	// out because its answer could not be read: the listing
	// ("ListVolumesOnDisk") and the error, which names the volume. The
	// agent logs and counts them.
	Skipped func(listing string, err error)
}

// New returns the native volume operations over d. Sys and Cmdlets are
// required: without them New answers an internal error naming what is
// missing, once, as the agent is assembled, and no call is ever made.
func New(d Deps) (Native, error) {
	if err := hostops.Assembled("volume", hostops.Dep{Present: d.Sys != nil, Name: "a Win32 host (Deps.Sys)"},
		hostops.Dep{Present: d.Cmdlets != nil, Name: "the WMI volume operations (Deps.Cmdlets, for FormatVolume and ResizeVolume)"}); err != nil {
		return Native{}, err
	}
	return Native{deps: d}, nil
}

var _ API = Native{}

// volumePaths returns the root (\\?\Volume{GUID}\) and device
// (\\?\Volume{GUID}) of a volume id. The caller validated the id; this
// checks it again, as the device path is opened.
func (n Native) volumePaths(volumeID string) (root, device string, err error) {
	if !win32.IsVolumeName(volumeID) {
		return "", "", fmt.Errorf(`%q is not a volume id of the form \\?\Volume{GUID}\; the call was not run`, volumeID)
	}
	return win32.VolumeRoot(volumeID), win32.VolumeDevice(volumeID), nil
}

// dirPath returns p with one trailing backslash, as the mount point
// functions take folders.
func dirPath(p string) string { return strings.TrimRight(p, `\`) + `\` }

// MountVolume mounts the volume at targetPath, an empty folder
// (SetVolumeMountPointW). A folder that already is a mount point of this
// volume is success, as in CSI Proxy: when the mount fails, the volume
// mounted at targetPath (GetVolumeNameForVolumeMountPointW) is looked at,
// and only another volume, or none, leaves the mount's error standing.
func (n Native) MountVolume(ctx context.Context, volumeID, targetPath string) error {
	root, _, err := n.volumePaths(volumeID)
	if err != nil {
		return err
	}
	mp := dirPath(targetPath)
	err = win32.Do(ctx, n.Limits, "SetVolumeMountPointW", func() error { return n.Sys.SetMountPoint(mp, root) })
	if err == nil {
		return nil
	}
	if ctx.Err() == nil && !errors.Is(err, context.DeadlineExceeded) {
		held, herr := win32.Call(ctx, n.Limits, "GetVolumeNameForVolumeMountPointW", func() (string, error) { return n.Sys.VolumeNameForMountPoint(mp) })
		if herr == nil && strings.EqualFold(held, root) {
			return nil
		}
		if herr == nil {
			return fmt.Errorf("mounting volume %s at %s: %w (the folder is the mount point of volume %s; unmount it first)", volumeID, targetPath, err, held)
		}
	}
	return fmt.Errorf("mounting volume %s at %s: %w", volumeID, targetPath, err)
}

// UnmountVolume flushes the volume's cache and then removes its mount
// point at targetPath (DeleteVolumeMountPointW); when the flush fails the
// mount point stays. A mount point that holds another volume is left alone
// and the call refused, as Remove-PartitionAccessPath on the volume's
// partition would.
func (n Native) UnmountVolume(ctx context.Context, volumeID, targetPath string) error {
	root, _, err := n.volumePaths(volumeID)
	if err != nil {
		return err
	}
	if err := n.flush(ctx, root); err != nil {
		return fmt.Errorf("unmounting volume %s from %s: the volume's cache was not flushed, so it stays mounted: %w", volumeID, targetPath, err)
	}
	mp := dirPath(targetPath)
	held, err := win32.Call(ctx, n.Limits, "GetVolumeNameForVolumeMountPointW", func() (string, error) { return n.Sys.VolumeNameForMountPoint(mp) })
	if err != nil {
		return fmt.Errorf("unmounting volume %s from %s: %w", volumeID, targetPath, err)
	}
	if !strings.EqualFold(held, root) {
		return fmt.Errorf("unmounting volume %s from %s refused: the mount point holds volume %s, not this one; nothing was unmounted", volumeID, targetPath, held)
	}
	if err := win32.Do(ctx, n.Limits, "DeleteVolumeMountPointW", func() error { return n.Sys.DeleteMountPoint(mp) }); err != nil {
		return fmt.Errorf("unmounting volume %s from %s: %w", volumeID, targetPath, err)
	}
	return nil
}

// flush writes the volume's cache to disk.
func (n Native) flush(ctx context.Context, root string) error {
	return win32.Do(ctx, n.Limits, "FlushFileBuffers", func() error { return n.Sys.FlushVolume(root) })
}

// IsVolumeFormatted reports whether Windows recognizes a file system on
// the volume (GetVolumeInformationW): not RAW, not unknown.
func (n Native) IsVolumeFormatted(ctx context.Context, volumeID string) (bool, error) {
	root, _, err := n.volumePaths(volumeID)
	if err != nil {
		return false, err
	}
	fs, err := win32.Call(ctx, n.Limits, "GetVolumeInformationW", func() (string, error) { return n.Sys.FileSystemName(root) })
	if err != nil {
		return false, fmt.Errorf("reading the file system of volume %s: %w", volumeID, err)
	}
	fs = strings.TrimSpace(fs)
	return fs != "" && !strings.EqualFold(fs, "RAW") && !strings.EqualFold(fs, "Unknown"), nil
}

// FormatVolume formats the volume as NTFS with Cmdlets.
func (n Native) FormatVolume(ctx context.Context, volumeID string) error {
	return n.Cmdlets.FormatVolume(ctx, volumeID)
}

// ResizeVolume grows the volume's partition with Cmdlets.
func (n Native) ResizeVolume(ctx context.Context, volumeID string, sizeBytes int64) error {
	return n.Cmdlets.ResizeVolume(ctx, volumeID, sizeBytes)
}

type space struct{ total, free uint64 }

// GetVolumeStats returns the volume's size and the bytes used on it
// (GetDiskFreeSpaceExW: total, and total less free).
func (n Native) GetVolumeStats(ctx context.Context, volumeID string) (int64, int64, error) {
	root, _, err := n.volumePaths(volumeID)
	if err != nil {
		return 0, 0, err
	}
	s, err := win32.Call(ctx, n.Limits, "GetDiskFreeSpaceExW", func() (space, error) {
		total, free, err := n.Sys.FreeSpace(root)
		return space{total, free}, err
	})
	if err != nil {
		return 0, 0, fmt.Errorf("reading the size of volume %s: %w", volumeID, err)
	}
	if s.total > math.MaxInt64 || s.free > s.total {
		return 0, 0, fmt.Errorf("reading the size of volume %s: GetDiskFreeSpaceExW answered %d bytes free of %d, which cannot be", volumeID, s.free, s.total)
	}
	return int64(s.total), int64(s.total - s.free), nil
}

// WriteVolumeCache flushes the volume's cache (FlushFileBuffers on the
// volume's device).
func (n Native) WriteVolumeCache(ctx context.Context, volumeID string) error {
	root, _, err := n.volumePaths(volumeID)
	if err != nil {
		return err
	}
	if err := n.flush(ctx, root); err != nil {
		return fmt.Errorf("flushing the cache of volume %s: %w", volumeID, err)
	}
	return nil
}
