package volume

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

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

// The scripts. They are constants: request values are read from $Env:.
const (
	scriptListOnDisk = `(Get-Disk -Number ([uint32]$Env:disknumber) | Get-Partition | Get-Volume).UniqueId`
	scriptListOnPart = `(Get-Partition -DiskNumber ([uint32]$Env:disknumber) -PartitionNumber ([uint32]$Env:partitionnumber) | Get-Volume).UniqueId`
	scriptMount      = `Get-Volume -UniqueId $Env:volumeid | Get-Partition | Add-PartitionAccessPath -AccessPath $Env:targetpath`
	scriptUnmount    = `Get-Volume -UniqueId $Env:volumeid | Write-VolumeCache; ` +
		`Get-Volume -UniqueId $Env:volumeid | Get-Partition | Remove-PartitionAccessPath -AccessPath $Env:targetpath`
	scriptFSType = `[string](Get-Volume -UniqueId $Env:volumeid).FileSystemType`
	scriptFormat = `Get-Volume -UniqueId $Env:volumeid | Format-Volume -FileSystem NTFS -Confirm:$false | Out-Null`
	scriptResize = `$p = Get-Volume -UniqueId $Env:volumeid | Get-Partition; $size = [int64]$Env:sizebytes; ` +
		`if ($size -eq 0) { $size = ($p | Get-PartitionSupportedSize).SizeMax }; ` +
		`if ($size - $p.Size -ge 100MB) { $p | Resize-Partition -Size $size }`
	scriptStats      = `Get-Volume -UniqueId $Env:volumeid | Select-Object Size, SizeRemaining | ConvertTo-Json -Compress`
	scriptDiskNumber = `(Get-Volume -UniqueId $Env:volumeid | Get-Partition).DiskNumber`
	scriptFromTarget = `(Get-Item -LiteralPath $Env:targetpath).Target`
	scriptClosest    = `$p = $Env:targetpath; ` +
		`for ($i = 0; $i -lt 256; $i++) { ` +
		`$item = Get-Item -LiteralPath $p -Force; ` +
		`if ($item.LinkType -and $item.Target) { $t = @($item.Target)[0]; ` +
		`if ($t -match 'Volume\{[0-9A-Fa-f-]+\}') { '\\?\' + $Matches[0] + '\'; return }; $p = $t; continue }; ` +
		`$parent = Split-Path -Parent $p; ` +
		`if (-not $parent) { (Get-Volume -DriveLetter $p[0]).UniqueId; return }; ` +
		`$p = $parent }; ` +
		`throw 'no volume found within 256 steps'`
	scriptWriteCache = `Get-Volume -UniqueId $Env:volumeid | Write-VolumeCache`
)

// PowerShell is API on Windows.
type PowerShell struct {
	Runner runner.Runner
}

var _ API = PowerShell{}

func volEnv(id string) string { return runner.Env("volumeid", id) }

func u32(v uint32) string { return strconv.FormatUint(uint64(v), 10) }

// ListVolumesOnDisk lists volume unique ids.
func (p PowerShell) ListVolumesOnDisk(ctx context.Context, disk, partition uint32) ([]string, error) {
	script, env := scriptListOnDisk, []string{runner.Env("disknumber", u32(disk))}
	if partition != 0 {
		script, env = scriptListOnPart, append(env, runner.Env("partitionnumber", u32(partition)))
	}
	out, err := runner.Script(ctx, p.Runner, "listing volumes", script, env...)
	if err != nil {
		return nil, err
	}
	return runner.Lines(out), nil
}

// MountVolume adds the target path as an access path of the volume's partition.
func (p PowerShell) MountVolume(ctx context.Context, volumeID, targetPath string) error {
	_, err := runner.Script(ctx, p.Runner, "Add-PartitionAccessPath", scriptMount, volEnv(volumeID), runner.Env("targetpath", targetPath))
	return err
}

// UnmountVolume flushes the volume cache and removes the access path.
func (p PowerShell) UnmountVolume(ctx context.Context, volumeID, targetPath string) error {
	_, err := runner.Script(ctx, p.Runner, "Remove-PartitionAccessPath", scriptUnmount, volEnv(volumeID), runner.Env("targetpath", targetPath))
	return err
}

// IsVolumeFormatted reports whether the volume has a known file system.
func (p PowerShell) IsVolumeFormatted(ctx context.Context, volumeID string) (bool, error) {
	out, err := runner.Script(ctx, p.Runner, "Get-Volume", scriptFSType, volEnv(volumeID))
	if err != nil {
		return false, err
	}
	fs := strings.TrimSpace(string(out))
	return fs != "" && !strings.EqualFold(fs, "Unknown") && fs != "0", nil
}

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

// GetVolumeStats returns the volume's size and used bytes.
func (p PowerShell) GetVolumeStats(ctx context.Context, volumeID string) (int64, int64, error) {
	out, err := runner.Script(ctx, p.Runner, "Get-Volume", scriptStats, volEnv(volumeID))
	if err != nil {
		return 0, 0, err
	}
	var v struct{ Size, SizeRemaining int64 }
	if err := json.Unmarshal([]byte(strings.TrimSpace(string(out))), &v); err != nil {
		return 0, 0, fmt.Errorf("parsing Get-Volume output %q: %w", out, err)
	}
	return v.Size, v.Size - v.SizeRemaining, nil
}

// GetDiskNumberFromVolumeID returns the number of the disk holding the volume.
func (p PowerShell) GetDiskNumberFromVolumeID(ctx context.Context, volumeID string) (uint32, error) {
	out, err := runner.Script(ctx, p.Runner, "Get-Partition", scriptDiskNumber, volEnv(volumeID))
	if err != nil {
		return 0, err
	}
	n, err := strconv.ParseUint(strings.TrimSpace(string(out)), 10, 32)
	if err != nil {
		return 0, fmt.Errorf("parsing disk number from %q: %w", out, err)
	}
	return uint32(n), nil
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

// GetVolumeIDFromTargetPath returns the volume mounted at targetPath, or a
// *LinkError when targetPath links to another path.
func (p PowerShell) GetVolumeIDFromTargetPath(ctx context.Context, targetPath string) (string, error) {
	out, err := runner.Script(ctx, p.Runner, "Get-Item", scriptFromTarget, runner.Env("targetpath", targetPath))
	if err != nil {
		return "", err
	}
	lines := runner.Lines(out)
	if len(lines) == 0 {
		return "", fmt.Errorf("%s is not a volume mount point", targetPath)
	}
	v := lines[0]
	if strings.HasPrefix(v, "Volume{") {
		v = `\\?\` + v
	}
	if !strings.HasPrefix(v, `\\?\Volume{`) {
		return "", &LinkError{Path: targetPath, Target: v}
	}
	if !strings.HasSuffix(v, `\`) {
		v += `\`
	}
	return v, nil
}

// GetClosestVolumeIDFromTargetPath walks up from targetPath, following links,
// to the first volume, ending at the drive's volume.
func (p PowerShell) GetClosestVolumeIDFromTargetPath(ctx context.Context, targetPath string) (string, error) {
	out, err := runner.Script(ctx, p.Runner, "finding closest volume", scriptClosest, runner.Env("targetpath", targetPath))
	if err != nil {
		return "", err
	}
	lines := runner.Lines(out)
	if len(lines) == 0 {
		return "", fmt.Errorf("no volume found for %s", targetPath)
	}
	return lines[0], nil
}

// WriteVolumeCache flushes the volume's file system cache.
func (p PowerShell) WriteVolumeCache(ctx context.Context, volumeID string) error {
	_, err := runner.Script(ctx, p.Runner, "Write-VolumeCache", scriptWriteCache, volEnv(volumeID))
	return err
}
