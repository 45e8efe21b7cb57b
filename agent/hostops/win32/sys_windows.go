package win32

import (
	"errors"
	"fmt"

	"golang.org/x/sys/windows"
)

// Windows is Sys on the host, through golang.org/x/sys/windows.
type Windows struct{}

var _ Sys = Windows{}

// New returns the host's Sys.
func New() Sys { return Windows{} }

// fail makes the *Error of a failed call, its Kind from the Windows error
// code.
func fail(fn, path string, err error) error {
	e := &Error{Func: fn, Path: path, Err: err}
	var errno windows.Errno
	if errors.As(err, &errno) {
		e.Kind = KindOf(uint32(errno))
	}
	return e
}

// utf16Ptr converts a path for a call; a path holding a NUL cannot be
// passed to Windows and names nothing.
func utf16Ptr(fn, path string) (*uint16, error) {
	p, err := windows.UTF16PtrFromString(path)
	if err != nil {
		return nil, &Error{Func: fn, Path: path, Err: fmt.Errorf("the path holds a NUL character: %w", err), Kind: ErrNotFound}
	}
	return p, nil
}

// VolumeNameForMountPoint calls GetVolumeNameForVolumeMountPointW.
func (Windows) VolumeNameForMountPoint(mountPoint string) (string, error) {
	const fn = "GetVolumeNameForVolumeMountPointW"
	p, err := utf16Ptr(fn, mountPoint)
	if err != nil {
		return "", err
	}
	// A volume GUID path takes 49 characters and its NUL.
	buf := make([]uint16, 64)
	if err := windows.GetVolumeNameForVolumeMountPoint(p, &buf[0], uint32(len(buf))); err != nil {
		return "", fail(fn, mountPoint, err)
	}
	return windows.UTF16ToString(buf), nil
}

// SetMountPoint calls SetVolumeMountPointW.
func (Windows) SetMountPoint(mountPoint, volume string) error {
	const fn = "SetVolumeMountPointW"
	mp, err := utf16Ptr(fn, mountPoint)
	if err != nil {
		return err
	}
	v, err := utf16Ptr(fn, volume)
	if err != nil {
		return err
	}
	if err := windows.SetVolumeMountPoint(mp, v); err != nil {
		return fail(fn, mountPoint, err)
	}
	return nil
}

// DeleteMountPoint calls DeleteVolumeMountPointW.
func (Windows) DeleteMountPoint(mountPoint string) error {
	const fn = "DeleteVolumeMountPointW"
	mp, err := utf16Ptr(fn, mountPoint)
	if err != nil {
		return err
	}
	if err := windows.DeleteVolumeMountPoint(mp); err != nil {
		return fail(fn, mountPoint, err)
	}
	return nil
}

// FileSystemName calls GetVolumeInformationW; ERROR_UNRECOGNIZED_VOLUME
// (no file system Windows knows) is "".
func (Windows) FileSystemName(volume string) (string, error) {
	const fn = "GetVolumeInformationW"
	p, err := utf16Ptr(fn, volume)
	if err != nil {
		return "", err
	}
	buf := make([]uint16, windows.MAX_PATH+1)
	err = windows.GetVolumeInformation(p, nil, 0, nil, nil, nil, &buf[0], uint32(len(buf)))
	if errors.Is(err, windows.ERROR_UNRECOGNIZED_VOLUME) {
		return "", nil
	}
	if err != nil {
		return "", fail(fn, volume, err)
	}
	return windows.UTF16ToString(buf), nil
}

// FreeSpace calls GetDiskFreeSpaceExW.
func (Windows) FreeSpace(path string) (uint64, uint64, error) {
	const fn = "GetDiskFreeSpaceExW"
	p, err := utf16Ptr(fn, path)
	if err != nil {
		return 0, 0, err
	}
	var available, total, free uint64
	if err := windows.GetDiskFreeSpaceEx(p, &available, &total, &free); err != nil {
		return 0, 0, fail(fn, path, err)
	}
	return total, free, nil
}

// FlushVolume opens the volume's device for reading and writing and calls
// FlushFileBuffers on it.
func (Windows) FlushVolume(volume string) error {
	device := VolumeDevice(volume)
	h, err := open(device, windows.GENERIC_READ|windows.GENERIC_WRITE, 0)
	if err != nil {
		return err
	}
	defer func() { _ = windows.CloseHandle(h) }()
	if err := windows.FlushFileBuffers(h); err != nil {
		return fail("FlushFileBuffers", device, err)
	}
	return nil
}

// open opens path with CreateFileW, sharing reading and writing (and
// deletion) with everyone else.
func open(path string, access, flags uint32) (windows.Handle, error) {
	const fn = "CreateFileW"
	p, err := utf16Ptr(fn, path)
	if err != nil {
		return windows.InvalidHandle, err
	}
	h, err := windows.CreateFile(p, access, windows.FILE_SHARE_READ|windows.FILE_SHARE_WRITE|windows.FILE_SHARE_DELETE,
		nil, windows.OPEN_EXISTING, flags, 0)
	if err != nil {
		return windows.InvalidHandle, fail(fn, path, err)
	}
	return h, nil
}

// maxVolumes bounds the volumes Volumes lists, should FindNextVolumeW
// never end.
const maxVolumes = 1 << 16

// Volumes calls FindFirstVolumeW and FindNextVolumeW.
func (Windows) Volumes() ([]string, error) {
	buf := make([]uint16, windows.MAX_PATH+1)
	h, err := windows.FindFirstVolume(&buf[0], uint32(len(buf)))
	if err != nil {
		return nil, fail("FindFirstVolumeW", "", err)
	}
	defer func() { _ = windows.FindVolumeClose(h) }()
	var out []string
	for {
		out = append(out, windows.UTF16ToString(buf))
		if len(out) > maxVolumes {
			return nil, &Error{Func: "FindNextVolumeW", Err: fmt.Errorf("more than %d volumes were listed", maxVolumes)}
		}
		err := windows.FindNextVolume(h, &buf[0], uint32(len(buf)))
		if errors.Is(err, windows.ERROR_NO_MORE_FILES) {
			return out, nil
		}
		if err != nil {
			return nil, fail("FindNextVolumeW", "", err)
		}
	}
}

// maxDosDevices bounds the buffer of QueryDosDeviceW, in UTF-16 units.
const maxDosDevices = 1 << 24

// PhysicalDrives lists every MS-DOS device name (QueryDosDeviceW with no
// name) and keeps the PhysicalDriveN ones.
func (Windows) PhysicalDrives() ([]uint32, error) {
	const fn = "QueryDosDeviceW"
	for size := 1 << 16; size <= maxDosDevices; size *= 4 {
		buf := make([]uint16, size)
		n, err := windows.QueryDosDevice(nil, &buf[0], uint32(len(buf)))
		if errors.Is(err, windows.ERROR_INSUFFICIENT_BUFFER) {
			continue
		}
		if err != nil {
			return nil, fail(fn, "", err)
		}
		return ParsePhysicalDrives(SplitMultiString(buf[:min(int(n), len(buf))])), nil
	}
	return nil, &Error{Func: fn, Err: fmt.Errorf("the device names take more than %d characters", maxDosDevices)}
}

// maxIoctlOutput bounds the output buffer of DeviceIoControl.
const maxIoctlOutput = 16 << 20

// accessFor returns the access rights to open a device with for code:
// exactly those its CTL_CODE's Access field asks for.
func accessFor(code uint32) uint32 {
	var access uint32
	if RequiredAccess(code)&FILE_READ_ACCESS != 0 {
		access |= windows.FILE_READ_DATA
	}
	if RequiredAccess(code)&FILE_WRITE_ACCESS != 0 {
		access |= windows.FILE_WRITE_DATA
	}
	return access
}

// DeviceIoControl opens device with the access code needs and sends it.
func (Windows) DeviceIoControl(device string, code uint32, in []byte, outSize int) ([]byte, error) {
	fn := DeviceIoControlFunc(code)
	if outSize < 0 || outSize > maxIoctlOutput {
		return nil, &Error{Func: fn, Path: device, Err: fmt.Errorf("an output buffer of %d bytes was asked for (0 to %d)", outSize, maxIoctlOutput)}
	}
	h, err := open(device, accessFor(code), 0)
	if err != nil {
		return nil, err
	}
	defer func() { _ = windows.CloseHandle(h) }()
	return ioctl(h, fn, device, code, in, outSize)
}

// ioctl sends code on h; on ErrBufferTooSmall the bytes written are
// returned with the error.
func ioctl(h windows.Handle, fn, path string, code uint32, in []byte, outSize int) ([]byte, error) {
	out := make([]byte, outSize)
	var inPtr, outPtr *byte
	if len(in) > 0 {
		inPtr = &in[0]
	}
	if outSize > 0 {
		outPtr = &out[0]
	}
	var n uint32
	err := windows.DeviceIoControl(h, code, inPtr, uint32(len(in)), outPtr, uint32(outSize), &n, nil)
	out = out[:min(int(n), outSize)]
	if err != nil {
		e := fail(fn, path, err)
		if errors.Is(e, ErrBufferTooSmall) {
			return out, e
		}
		return nil, e
	}
	return out, nil
}

// ReadReparsePoint opens path itself, not what it points to, and sends
// FSCTL_GET_REPARSE_POINT.
func (Windows) ReadReparsePoint(path string) ([]byte, error) {
	h, err := open(path, 0, windows.FILE_FLAG_OPEN_REPARSE_POINT|windows.FILE_FLAG_BACKUP_SEMANTICS)
	if err != nil {
		return nil, err
	}
	defer func() { _ = windows.CloseHandle(h) }()
	return ioctl(h, DeviceIoControlFunc(FSCTL_GET_REPARSE_POINT), path, FSCTL_GET_REPARSE_POINT, nil, MaximumReparseDataBufferSize)
}

// FileExists calls GetFileAttributesW.
func (Windows) FileExists(path string) (bool, error) {
	const fn = "GetFileAttributesW"
	p, err := utf16Ptr(fn, path)
	if err != nil {
		return false, nil
	}
	if _, err := windows.GetFileAttributes(p); err != nil {
		e := fail(fn, path, err)
		if errors.Is(e, ErrNotFound) {
			return false, nil
		}
		return false, e
	}
	return true, nil
}

// symbolicLinkFlagAllowUnprivilegedCreate is
// SYMBOLIC_LINK_FLAG_ALLOW_UNPRIVILEGED_CREATE: with Developer Mode on,
// lets an account without SeCreateSymbolicLinkPrivilege create links.
// Windows before 10 1703 refuses the flag with ERROR_INVALID_PARAMETER.
const symbolicLinkFlagAllowUnprivilegedCreate = 0x2

// Symlink calls CreateSymbolicLinkW with SYMBOLIC_LINK_FLAG_DIRECTORY.
func (Windows) Symlink(target, link string) error {
	const fn = "CreateSymbolicLinkW"
	l, err := utf16Ptr(fn, link)
	if err != nil {
		return err
	}
	t, err := utf16Ptr(fn, target)
	if err != nil {
		return err
	}
	err = windows.CreateSymbolicLink(l, t, windows.SYMBOLIC_LINK_FLAG_DIRECTORY|symbolicLinkFlagAllowUnprivilegedCreate)
	if errors.Is(err, windows.ERROR_INVALID_PARAMETER) {
		err = windows.CreateSymbolicLink(l, t, windows.SYMBOLIC_LINK_FLAG_DIRECTORY)
	}
	if err != nil {
		return fail(fn, link, err)
	}
	return nil
}
