package win32

import "fmt"

// Unsupported is Sys on an OS other than Windows: every call fails with
// ErrNotSupported. The Windows groups' calls are answered before any host
// operation there; it is a second stop.
type Unsupported struct{ GOOS string }

var _ Sys = Unsupported{}

func (u Unsupported) refuse(fn, path string) error {
	return &Error{Func: fn, Path: path, Err: fmt.Errorf("cannot be called on %s: this host operation needs Windows", u.GOOS), Kind: ErrNotSupported}
}

// VolumeNameForMountPoint fails.
func (u Unsupported) VolumeNameForMountPoint(mountPoint string) (string, error) {
	return "", u.refuse("GetVolumeNameForVolumeMountPointW", mountPoint)
}

// SetMountPoint fails.
func (u Unsupported) SetMountPoint(mountPoint, _ string) error {
	return u.refuse("SetVolumeMountPointW", mountPoint)
}

// DeleteMountPoint fails.
func (u Unsupported) DeleteMountPoint(mountPoint string) error {
	return u.refuse("DeleteVolumeMountPointW", mountPoint)
}

// FileSystemName fails.
func (u Unsupported) FileSystemName(volume string) (string, error) {
	return "", u.refuse("GetVolumeInformationW", volume)
}

// FreeSpace fails.
func (u Unsupported) FreeSpace(path string) (uint64, uint64, error) {
	return 0, 0, u.refuse("GetDiskFreeSpaceExW", path)
}

// FlushVolume fails.
func (u Unsupported) FlushVolume(volume string) error {
	return u.refuse("FlushFileBuffers", VolumeDevice(volume))
}

// Volumes fails.
func (u Unsupported) Volumes() ([]string, error) { return nil, u.refuse("FindFirstVolumeW", "") }

// PhysicalDrives fails.
func (u Unsupported) PhysicalDrives() ([]uint32, error) { return nil, u.refuse("QueryDosDeviceW", "") }

// DeviceIoControl fails.
func (u Unsupported) DeviceIoControl(device string, code uint32, _ []byte, _ int) ([]byte, error) {
	return nil, u.refuse(DeviceIoControlFunc(code), device)
}

// ReadReparsePoint fails.
func (u Unsupported) ReadReparsePoint(path string) ([]byte, error) {
	return nil, u.refuse(DeviceIoControlFunc(FSCTL_GET_REPARSE_POINT), path)
}

// FileExists fails.
func (u Unsupported) FileExists(path string) (bool, error) {
	return false, u.refuse("GetFileAttributesW", path)
}

// Symlink fails.
func (u Unsupported) Symlink(_, link string) error { return u.refuse("CreateSymbolicLinkW", link) }
