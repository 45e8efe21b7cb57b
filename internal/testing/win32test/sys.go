package win32test

import (
	"slices"
	"strings"

	"github.com/pipeguard/pipeguard/agent/hostops/win32"
)

// The win32.Sys methods of Host but DeviceIoControl (ioctl.go).

// VolumeNameForMountPoint answers for drive roots, mount points and
// volume roots; a path without its trailing backslash is
// ERROR_INVALID_PARAMETER, and another path ERROR_NOT_A_REPARSE_POINT.
func (h *Host) VolumeNameForMountPoint(mountPoint string) (string, error) {
	const fn = "GetVolumeNameForVolumeMountPointW"
	if err := h.begin(fn, mountPoint); err != nil {
		return "", err
	}
	h.mu.Lock()
	k := fold(mountPoint)
	id, known := h.drives[k]
	if !known {
		id, known = h.mounts[k]
	}
	if v, ok := h.volumes[k]; ok && !known {
		id, known = v.ID, true
	}
	h.mu.Unlock()
	switch {
	case known && !strings.HasSuffix(mountPoint, `\`):
		return "", Fail(fn, mountPoint, ErrInvalidParameter)
	case known:
		return win32.VolumeRoot(id), nil
	case h.Real != nil:
		return h.Real.VolumeNameForMountPoint(mountPoint)
	}
	return "", Fail(fn, mountPoint, ErrNotAReparsePoint)
}

// SetMountPoint records the mount point. Both names need their trailing
// backslash (ERROR_INVALID_NAME); the volume must be known
// (ERROR_FILE_NOT_FOUND) and the folder no reparse point yet
// (ERROR_DIR_NOT_EMPTY).
func (h *Host) SetMountPoint(mountPoint, volume string) error {
	const fn = "SetVolumeMountPointW"
	if err := h.begin(fn, mountPoint); err != nil {
		return err
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	k := fold(mountPoint)
	switch {
	case !strings.HasSuffix(mountPoint, `\`) || !strings.HasSuffix(volume, `\`):
		return Fail(fn, mountPoint, ErrInvalidName)
	case h.volumes[fold(volume)] == nil:
		return Fail(fn, mountPoint, ErrFileNotFound)
	case h.mounts[k] != "" || h.reparse[k] != nil:
		return Fail(fn, mountPoint, ErrDirNotEmpty)
	}
	h.mounts[k] = h.volumes[fold(volume)].ID
	h.mountsAt[k] = mountPoint
	return nil
}

// DeleteMountPoint removes a mount point SetMountPoint made; another path
// is ERROR_NOT_A_REPARSE_POINT.
func (h *Host) DeleteMountPoint(mountPoint string) error {
	const fn = "DeleteVolumeMountPointW"
	if err := h.begin(fn, mountPoint); err != nil {
		return err
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	k := fold(mountPoint)
	if h.mounts[k] == "" {
		return Fail(fn, mountPoint, ErrNotAReparsePoint)
	}
	if !strings.HasSuffix(mountPoint, `\`) {
		return Fail(fn, mountPoint, ErrInvalidName)
	}
	delete(h.mounts, k)
	delete(h.mountsAt, k)
	return nil
}

// FileSystemName answers the volume's FileSystem.
func (h *Host) FileSystemName(volume string) (string, error) {
	const fn = "GetVolumeInformationW"
	if err := h.begin(fn, volume); err != nil {
		return "", err
	}
	h.mu.Lock()
	v := h.volumeOf(volume)
	h.mu.Unlock()
	switch {
	case v != nil:
		return v.FileSystem, nil
	case h.Real != nil:
		return h.Real.FileSystemName(volume)
	}
	return "", Fail(fn, volume, ErrFileNotFound)
}

// FreeSpace answers the Total and Free of the volume path names.
func (h *Host) FreeSpace(path string) (uint64, uint64, error) {
	const fn = "GetDiskFreeSpaceExW"
	if err := h.begin(fn, path); err != nil {
		return 0, 0, err
	}
	h.mu.Lock()
	v := h.volumeOf(path)
	h.mu.Unlock()
	switch {
	case v != nil:
		return v.Total, v.Free, nil
	case h.Real != nil:
		return h.Real.FreeSpace(path)
	}
	return 0, 0, Fail(fn, path, ErrFileNotFound)
}

// FlushVolume counts a flush of a known volume.
func (h *Host) FlushVolume(volume string) error {
	const fn = "FlushFileBuffers"
	if err := h.begin(fn, win32.VolumeDevice(volume)); err != nil {
		return err
	}
	h.mu.Lock()
	v := h.volumes[fold(volume)]
	if v != nil {
		h.flushes[fold(volume)]++
	}
	h.mu.Unlock()
	switch {
	case v != nil:
		return nil
	case h.Real != nil:
		return h.Real.FlushVolume(volume)
	}
	return Fail("CreateFileW", win32.VolumeDevice(volume), ErrFileNotFound)
}

// Volumes lists the volumes in the order they were added, then those of
// Real it does not hold.
func (h *Host) Volumes() ([]string, error) {
	if err := h.begin("FindFirstVolumeW", ""); err != nil {
		return nil, err
	}
	h.mu.Lock()
	out := slices.Clone(h.order)
	h.mu.Unlock()
	if h.Real == nil {
		return out, nil
	}
	real, err := h.Real.Volumes()
	if err != nil {
		return nil, err
	}
	for _, v := range real {
		if !slices.ContainsFunc(out, func(o string) bool { return fold(o) == fold(v) }) {
			out = append(out, v)
		}
	}
	return out, nil
}

// PhysicalDrives lists the disks' numbers.
func (h *Host) PhysicalDrives() ([]uint32, error) {
	if err := h.begin("QueryDosDeviceW", ""); err != nil {
		return nil, err
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []uint32
	for n := range h.disks {
		out = append(out, n)
	}
	slices.Sort(out)
	return out, nil
}

// ReadReparsePoint answers mount points as SetVolumeMountPointW writes
// them (substitute name \??\Volume{GUID}\, no print name), and the data
// set with SetReparseData or written by Symlink.
func (h *Host) ReadReparsePoint(path string) ([]byte, error) {
	fn := win32.DeviceIoControlFunc(win32.FSCTL_GET_REPARSE_POINT)
	if err := h.begin(fn, path); err != nil {
		return nil, err
	}
	h.mu.Lock()
	k := fold(path)
	data, isReparse := h.reparse[k]
	id, isMount := h.mounts[k]
	h.mu.Unlock()
	switch {
	case isMount:
		return MountPointReparse(`\??\`+strings.TrimPrefix(win32.VolumeRoot(id), `\\?\`), ""), nil
	case isReparse:
		return slices.Clone(data), nil
	case h.Real != nil:
		return h.Real.ReadReparsePoint(path)
	}
	return nil, Fail(fn, path, ErrNotAReparsePoint)
}

// FileExists answers true for the paths the host holds.
func (h *Host) FileExists(path string) (bool, error) {
	if err := h.begin("GetFileAttributesW", path); err != nil {
		return false, err
	}
	h.mu.Lock()
	k := fold(path)
	known := h.files[k] || h.reparse[k] != nil || h.mounts[k] != "" || h.drives[k] != "" || h.volumes[k] != nil
	h.mu.Unlock()
	if !known && h.Real != nil {
		return h.Real.FileExists(path)
	}
	return known, nil
}

// Symlink records link as a symbolic link to target, with the substitute
// name CreateSymbolicLinkW would write (\??\C:\x, \??\UNC\server\share\x,
// or the relative target with SYMLINK_FLAG_RELATIVE). A link that exists
// already is ERROR_ALREADY_EXISTS. It never asks Real.
func (h *Host) Symlink(target, link string) error {
	const fn = "CreateSymbolicLinkW"
	if err := h.begin(fn, link); err != nil {
		return err
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	k := fold(link)
	if h.files[k] || h.reparse[k] != nil || h.mounts[k] != "" {
		return Fail(fn, link, ErrAlreadyExists)
	}
	sub, flags := ntName(target)
	h.reparse[k] = SymlinkReparse(sub, target, flags)
	return nil
}
