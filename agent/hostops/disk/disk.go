package disk

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/pipeguard/pipeguard/agent/hostops/runner"
)

// Location is where a disk is attached, as CSI Proxy reports it: SCSI
// adapter, target and LUN (see locationRules). Bus is part of the API and
// never set, as CSI Proxy never sets it.
type Location struct {
	Adapter, Bus, Target, LUNID string
}

// IDs are a disk's identifiers.
type IDs struct {
	// Page83 is the SCSI page 83 identifier, as CSI Proxy reports it (Page83ID).
	Page83 string
	// SerialNumber is the disk's serial number.
	SerialNumber string
}

// API is the disk host operations.
type API interface {
	ListDiskLocations(ctx context.Context) (map[uint32]Location, error)
	PartitionDisk(ctx context.Context, disk uint32) error
	Rescan(ctx context.Context) error
	ListDiskIDs(ctx context.Context) (map[uint32]IDs, error)
	GetDiskStats(ctx context.Context, disk uint32) (totalBytes int64, err error)
	SetDiskState(ctx context.Context, disk uint32, online bool) error
	GetDiskState(ctx context.Context, disk uint32) (online bool, err error)
}

// Cmdlets is what the disk group runs otherwise than by Win32 calls, having
// no Win32 equivalent here: partitioning, rescanning and the online state,
// through WMI (WMI) or PowerShell (PowerShell). Native runs everything else.
type Cmdlets interface {
	PartitionDisk(ctx context.Context, disk uint32) error
	Rescan(ctx context.Context) error
	SetDiskState(ctx context.Context, disk uint32, online bool) error
	GetDiskState(ctx context.Context, disk uint32) (online bool, err error)
}

// The scripts. They are constants: request values are read from $Env:.
const (
	scriptPartition = `$n = [uint32]$Env:disknumber; $d = Get-Disk -Number $n; ` +
		`if ($d.PartitionStyle -eq 'RAW') { Initialize-Disk -Number $n -PartitionStyle GPT }; ` +
		`$p = Get-Partition -DiskNumber $n -ErrorAction SilentlyContinue | Where-Object { $_.Type -ne 'Reserved' }; ` +
		`if (-not $p) { New-Partition -DiskNumber $n -UseMaximumSize | Out-Null }`
	scriptRescan   = `Update-HostStorageCache`
	scriptSetState = `Set-Disk -Number ([uint32]$Env:disknumber) -IsOffline ($Env:diskoffline -eq 'true')`
	scriptGetState = `(Get-Disk -Number ([uint32]$Env:disknumber)).IsOffline`
)

// PowerShell is Cmdlets, run through a runner.Runner (the agent's
// PowerShell workers).
type PowerShell struct {
	Runner runner.Runner
}

var _ Cmdlets = PowerShell{}

func diskEnv(disk uint32) string {
	return runner.Env("disknumber", strconv.FormatUint(uint64(disk), 10))
}

// PartitionDisk initializes a raw disk as GPT and creates one partition
// filling it, unless it already has a non-reserved partition.
func (p PowerShell) PartitionDisk(ctx context.Context, disk uint32) error {
	_, err := runner.Script(ctx, p.Runner, "partitioning disk", scriptPartition, diskEnv(disk))
	return err
}

// Rescan runs Update-HostStorageCache.
func (p PowerShell) Rescan(ctx context.Context) error {
	_, err := runner.Script(ctx, p.Runner, "Update-HostStorageCache", scriptRescan)
	return err
}

// SetDiskState brings a disk online or offline.
func (p PowerShell) SetDiskState(ctx context.Context, disk uint32, online bool) error {
	_, err := runner.Script(ctx, p.Runner, "Set-Disk", scriptSetState, diskEnv(disk), runner.Env("diskoffline", strconv.FormatBool(!online)))
	return err
}

// GetDiskState reports whether a disk is online.
func (p PowerShell) GetDiskState(ctx context.Context, disk uint32) (bool, error) {
	out, err := runner.Script(ctx, p.Runner, "Get-Disk", scriptGetState, diskEnv(disk))
	if err != nil {
		return false, err
	}
	offline, err := strconv.ParseBool(strings.TrimSpace(string(out)))
	if err != nil {
		return false, fmt.Errorf("parsing state of disk %d from %q: %w", disk, out, err)
	}
	return !offline, nil
}
