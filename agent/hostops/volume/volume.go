package volume

import (
	"context"
	"fmt"
)

// API is the volume host operations. Volume ids have been validated and
// target paths confined by the caller.
type API interface {
	// ListVolumesOnDisk lists the volume ids on a disk; partition 0 means all.
	ListVolumesOnDisk(ctx context.Context, disk, partition uint32) ([]string, error)
	MountVolume(ctx context.Context, volumeID, targetPath string) error
	UnmountVolume(ctx context.Context, volumeID, targetPath string) error
	IsVolumeFormatted(ctx context.Context, volumeID string) (bool, error)
	FormatVolume(ctx context.Context, volumeID string) error
	// ResizeVolume grows the partition to sizeBytes; 0 means as large as possible.
	ResizeVolume(ctx context.Context, volumeID string, sizeBytes int64) error
	GetVolumeStats(ctx context.Context, volumeID string) (totalBytes, usedBytes int64, err error)
	GetDiskNumberFromVolumeID(ctx context.Context, volumeID string) (uint32, error)
	// GetVolumeIDFromTargetPath returns the volume mounted at targetPath,
	// or a *LinkError when targetPath links to another path.
	GetVolumeIDFromTargetPath(ctx context.Context, targetPath string) (string, error)
	GetClosestVolumeIDFromTargetPath(ctx context.Context, targetPath string) (string, error)
	WriteVolumeCache(ctx context.Context, volumeID string) error
}

// Cmdlets is what the volume group does through WMI (WMI), having no Win32
// call for it: formatting and resizing, which PowerShell's Format-Volume
// and Resize-Partition also do through those WMI methods. Native runs
// everything else.
type Cmdlets interface {
	FormatVolume(ctx context.Context, volumeID string) error
	// ResizeVolume grows the partition to sizeBytes; 0 means as large as possible.
	ResizeVolume(ctx context.Context, volumeID string, sizeBytes int64) error
}

// LinkError is the error of GetVolumeIDFromTargetPath for a target path
// that links to another path rather than to a volume, such as a publish
// path linking to the staging mount. The caller decides whether to follow
// Target.
type LinkError struct {
	// Path is the target path that was read.
	Path string
	// Target is what it links to, as the host reported it.
	Target string
}

func (e *LinkError) Error() string {
	return fmt.Sprintf("%s links to %s, not to a volume", e.Path, e.Target)
}
