package win32test

import (
	"slices"
	"strings"
	"sync"

	"github.com/pipeguard/pipeguard/agent/hostops/win32"
)

// Disk is a disk of the fake host, \\.\PhysicalDrive<Number>.
type Disk struct {
	Number uint32
	// SCSI is its address; nil makes IOCTL_SCSI_GET_ADDRESS fail with
	// ERROR_INVALID_FUNCTION, as for a disk on no SCSI port.
	SCSI *win32.SCSIAddress
	// Page83 is its STORAGE_DEVICE_ID_DESCRIPTOR, the answer to
	// IOCTL_STORAGE_QUERY_PROPERTY for StorageDeviceIdProperty; nil makes
	// that query fail with ERROR_NOT_SUPPORTED.
	Page83 []byte
	// Vendor, Product and Serial are the strings of its
	// STORAGE_DEVICE_DESCRIPTOR (StorageDeviceProperty), written as they
	// are (any bytes but NUL), and Bus its BusType. A Bus left 0
	// (BusTypeUnknown) on a disk with a SCSI address answers BusTypeScsi,
	// so that a disk given only its address is a SCSI disk; an unknown bus
	// with an address needs Answer.
	Vendor, Product, Serial string
	Bus                     win32.StorageBusType
	// Size is its length in bytes (IOCTL_DISK_GET_LENGTH_INFO).
	Size int64
}

// Volume is a volume of the fake host.
type Volume struct {
	// ID is its volume GUID path, \\?\Volume{GUID}\.
	ID string
	// Extents are where it lies (IOCTL_VOLUME_GET_VOLUME_DISK_EXTENTS).
	Extents []win32.DiskExtent
	// PartitionNumber is the partition IOCTL_STORAGE_GET_DEVICE_NUMBER
	// names for a volume of one extent; a volume of several extents (a
	// spanned volume) fails that call with ERROR_INVALID_FUNCTION.
	PartitionNumber uint32
	// FileSystem is what GetVolumeInformationW names; "" for RAW.
	FileSystem string
	// Total and Free are what GetDiskFreeSpaceExW answers.
	Total, Free uint64
}

// Call is one call the host received: the Win32 function, as
// win32.Error names it, and the path, volume or device.
type Call struct {
	Func string
	Path string
}

// Host is an in-memory win32.Sys, safe for concurrent use. Paths are
// compared without regard to case, with or without a trailing backslash.
// What it does not know it asks Real, when set: FreeSpace, FileSystemName
// and FlushVolume of other volumes and paths, VolumeNameForMountPoint of
// other paths, DeviceIoControl of other devices, ReadReparsePoint and
// FileExists of other paths, and Volumes (added to its own). Without Real,
// another path is an existing folder that is no reparse point. Set Real
// and Before before the first call.
type Host struct {
	// Real answers what the host does not know; nil: nothing does.
	Real win32.Sys
	// Before, when set, runs first in every call, outside the host's lock:
	// a non-nil error is the call's answer. It may block, to make a call
	// hang.
	Before func(Call) error

	mu       sync.Mutex
	disks    map[uint32]Disk
	volumes  map[string]*Volume // by folded VolumeRoot
	order    []string           // volume ids as added
	drives   map[string]string  // folded drive root -> volume id
	mounts   map[string]string  // folded mount point -> volume id
	reparse  map[string][]byte  // folded path -> REPARSE_DATA_BUFFER
	files    map[string]bool    // folded paths that exist
	answers  map[answerKey]answer
	calls    []Call
	flushes  map[string]int
	mountsAt map[string]string // folded mount point -> path as given
}

type answerKey struct {
	device string
	code   uint32
}

type answer struct {
	out []byte
	err error
}

// New returns an empty host.
func New() *Host {
	return &Host{
		disks: map[uint32]Disk{}, volumes: map[string]*Volume{}, drives: map[string]string{},
		mounts: map[string]string{}, reparse: map[string][]byte{}, files: map[string]bool{},
		answers: map[answerKey]answer{}, flushes: map[string]int{}, mountsAt: map[string]string{},
	}
}

var _ win32.Sys = (*Host)(nil)

// fold is the key of a path: upper case, without trailing backslashes
// (a drive root keeps its colon: "C:").
func fold(p string) string { return strings.ToUpper(strings.TrimRight(p, `\`)) }

// AddDisk adds or replaces a disk.
func (h *Host) AddDisk(d Disk) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.disks[d.Number] = d
}

// AddVolume adds or replaces a volume.
func (h *Host) AddVolume(v Volume) {
	h.mu.Lock()
	defer h.mu.Unlock()
	k := fold(v.ID)
	if _, ok := h.volumes[k]; !ok {
		h.order = append(h.order, v.ID)
	}
	h.volumes[k] = &v
}

// AddDrive gives volume the drive root root (e.g. C:\), which
// VolumeNameForMountPoint answers and which is no reparse point.
func (h *Host) AddDrive(root, volume string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.drives[fold(root)] = win32.VolumeRoot(volume)
}

// SetReparseData makes path a reparse point holding data, whatever it
// holds: ReadReparsePoint answers it as it is.
func (h *Host) SetReparseData(path string, data []byte) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.reparse[fold(path)] = slices.Clone(data)
}

// AddFile makes path exist (FileExists).
func (h *Host) AddFile(path string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.files[fold(path)] = true
}

// Answer makes DeviceIoControl of code on device answer out (cut to the
// output buffer) and err, whatever the host holds.
func (h *Host) Answer(device string, code uint32, out []byte, err error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.answers[answerKey{fold(device), code}] = answer{slices.Clone(out), err}
}

// Calls returns the calls received so far, in order.
func (h *Host) Calls() []Call {
	h.mu.Lock()
	defer h.mu.Unlock()
	return slices.Clone(h.calls)
}

// MountPoints returns the mount points made by SetMountPoint and not yet
// deleted: the path as given to SetMountPoint, and the volume.
func (h *Host) MountPoints() map[string]string {
	h.mu.Lock()
	defer h.mu.Unlock()
	out := map[string]string{}
	for k, v := range h.mounts {
		out[h.mountsAt[k]] = v
	}
	return out
}

// Flushes returns how many times volume was flushed.
func (h *Host) Flushes(volume string) int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.flushes[fold(volume)]
}

// begin records a call and runs Before.
func (h *Host) begin(fn, path string) error {
	h.mu.Lock()
	h.calls = append(h.calls, Call{Func: fn, Path: path})
	before := h.Before
	h.mu.Unlock()
	if before != nil {
		return before(Call{Func: fn, Path: path})
	}
	return nil
}

// volumeOf returns the volume path names: a volume's root or device, a
// drive root or a mount point. The lock is held.
func (h *Host) volumeOf(path string) *Volume {
	k := fold(path)
	if v, ok := h.volumes[k]; ok {
		return v
	}
	if id, ok := h.drives[k]; ok {
		return h.volumes[fold(id)]
	}
	if id, ok := h.mounts[k]; ok {
		return h.volumes[fold(id)]
	}
	return nil
}

// ntName returns the substitute name CreateSymbolicLinkW stores for target.
func ntName(target string) (string, uint32) {
	switch {
	case strings.HasPrefix(target, `\\?\`):
		return `\??\` + target[4:], 0
	case strings.HasPrefix(target, `\\`):
		return `\??\UNC\` + target[2:], 0
	case len(target) >= 3 && target[1] == ':' && target[2] == '\\':
		return `\??\` + target, 0
	}
	return target, win32.SYMLINK_FLAG_RELATIVE
}

// physicalDrive returns N of \\.\PhysicalDriveN.
func physicalDrive(device string) (uint32, bool) {
	const prefix = `\\.\`
	if !strings.HasPrefix(device, prefix) {
		return 0, false
	}
	drives := win32.ParsePhysicalDrives([]string{device[len(prefix):]})
	return firstOf(drives)
}

func firstOf(s []uint32) (uint32, bool) {
	if len(s) != 1 {
		return 0, false
	}
	return s[0], true
}
