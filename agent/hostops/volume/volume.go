package volume

import (
	"context"
	"fmt"
	"strconv"

	"github.com/pipeguard/pipeguard/agent/hostops/runner"
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

// Cmdlets is what the volume group runs otherwise than by Win32 calls,
// having no Win32 equivalent: formatting and resizing, through WMI (WMI) or
// PowerShell (PowerShell). Native runs everything else.
type Cmdlets interface {
	FormatVolume(ctx context.Context, volumeID string) error
	// ResizeVolume grows the partition to sizeBytes; 0 means as large as possible.
	ResizeVolume(ctx context.Context, volumeID string, sizeBytes int64) error
}

// The scripts. They are constants: request values are read from $Env:.
// As CSI Proxy 1.3 does, a format is a quick NTFS format and a resize
// refreshes the disk's cached layout after it. Unlike CSI Proxy, a format
// is not forced: a volume in use (mounted and open, say a pod's) is not
// taken off to be formatted.
const (
	scriptFormat = `Get-Volume -UniqueId $Env:volumeid | Format-Volume -FileSystem NTFS -Confirm:$false | Out-Null`
	scriptResize = `$p = Get-Volume -UniqueId $Env:volumeid | Get-Partition; $size = [int64]$Env:sizebytes; ` +
		`if ($size -eq 0) { $size = ($p | Get-PartitionSupportedSize).SizeMax }; ` +
		`if ($size - $p.Size -ge 100MB) { $p | Resize-Partition -Size $size; $p | Get-Disk | Update-Disk }`
)

// PowerShell is Cmdlets, run through a runner.Runner (the agent's
// PowerShell workers).
type PowerShell struct {
	Runner runner.Runner
}

var _ Cmdlets = PowerShell{}

func volEnv(id string) string { return runner.Env("volumeid", id) }

// FormatVolume formats the volume as NTFS.
func (p PowerShell) FormatVolume(ctx context.Context, volumeID string) error {
	_, err := runner.Script(ctx, p.Runner, "Format-Volume", scriptFormat, volEnv(volumeID))
	return err
}

// ResizeVolume grows the volume's partition; like CSI Proxy it skips growth
// under 100MB and never shrinks.
func (p PowerShell) ResizeVolume(ctx context.Context, volumeID string, sizeBytes int64) error {
	_, err := runner.Script(ctx, p.Runner, "Resize-Partition", scriptResize, volEnv(volumeID), runner.Env("sizebytes", strconv.FormatInt(sizeBytes, 10)))
	return err
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
