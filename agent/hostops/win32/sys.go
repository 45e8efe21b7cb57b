package win32

// Sys is the Win32 calls of the native host operations. Paths are passed
// to Windows as given: a mount point or volume root ends with a backslash
// where the function asks for one (the callers add it). Failures are
// *Error values naming the function and the path.
type Sys interface {
	// VolumeNameForMountPoint returns the volume GUID path
	// (\\?\Volume{GUID}\) of the volume mounted at mountPoint, a drive
	// root (C:\) or a mount point folder, with its trailing backslash
	// (GetVolumeNameForVolumeMountPointW).
	VolumeNameForMountPoint(mountPoint string) (string, error)
	// SetMountPoint mounts volume (\\?\Volume{GUID}\) at mountPoint, an
	// empty folder given with a trailing backslash (SetVolumeMountPointW).
	SetMountPoint(mountPoint, volume string) error
	// DeleteMountPoint removes the mount point at mountPoint, given with a
	// trailing backslash (DeleteVolumeMountPointW).
	DeleteMountPoint(mountPoint string) error
	// FileSystemName returns the name of the file system of volume, a
	// root with its trailing backslash, e.g. "NTFS" (GetVolumeInformationW).
	// A volume Windows finds no file system on (RAW) is "" and no error.
	FileSystemName(volume string) (string, error)
	// FreeSpace returns the size of the volume holding path and its free
	// bytes, counting all of them, not only those the caller's quota
	// allows (GetDiskFreeSpaceExW: TotalNumberOfBytes,
	// TotalNumberOfFreeBytes). path is a directory with a trailing
	// backslash.
	FreeSpace(path string) (total, free uint64, err error)
	// FlushVolume writes the file system cache of volume to disk: it opens
	// the volume's device (VolumeDevice) for reading and writing and calls
	// FlushFileBuffers on it, which needs administrative rights.
	FlushVolume(volume string) error
	// Volumes returns the volume GUID paths of the host, with their
	// trailing backslash (FindFirstVolumeW, FindNextVolumeW).
	Volumes() ([]string, error)
	// PhysicalDrives returns the numbers N of the host's
	// \\.\PhysicalDriveN devices, in increasing order (QueryDosDeviceW
	// listing every MS-DOS device name).
	PhysicalDrives() ([]uint32, error)
	// DeviceIoControl opens device (e.g. \\.\PhysicalDrive1, or a
	// VolumeDevice) with exactly the access the code's CTL_CODE asks for
	// (none for FILE_ANY_ACCESS, so that queries need no rights on the
	// device), sends code with in, and returns the bytes written to an
	// output buffer of outSize bytes. When they did not fit, the error is
	// ErrBufferTooSmall and the bytes that did are returned with it.
	DeviceIoControl(device string, code uint32, in []byte, outSize int) ([]byte, error)
	// ReadReparsePoint returns the REPARSE_DATA_BUFFER of path itself,
	// not following it (FSCTL_GET_REPARSE_POINT on a handle opened with
	// FILE_FLAG_OPEN_REPARSE_POINT and FILE_FLAG_BACKUP_SEMANTICS); a path
	// that is no reparse point is ErrNotReparsePoint. ParseReparsePoint
	// reads the answer.
	ReadReparsePoint(path string) ([]byte, error)
	// FileExists reports whether path exists (GetFileAttributesW): a path
	// that does not (ErrNotFound) is false and no error; any other failure
	// (a share that refuses the credentials, say) is false and the error.
	FileExists(path string) (bool, error)
	// Symlink creates link as a directory symbolic link to target
	// (CreateSymbolicLinkW with SYMBOLIC_LINK_FLAG_DIRECTORY), without
	// looking at target, which may be a share that does not answer.
	Symlink(target, link string) error
}
