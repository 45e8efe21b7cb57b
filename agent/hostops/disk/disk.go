package disk

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/pipeguard/pipeguard/agent/hostops/runner"
)

// Location is where a disk is attached: SCSI adapter, bus (port), target and LUN.
type Location struct {
	Adapter, Bus, Target, LUNID string
}

// IDs are a disk's identifiers.
type IDs struct {
	// Page83 is the SCSI page 83 identifier, as Get-Disk reports it in UniqueId.
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

// The scripts. They are constants: request values are read from $Env:.
const (
	scriptListLocations = `Get-Disk | Select-Object Number, Location | ConvertTo-Json -Compress`
	scriptPartition     = `$n = [uint32]$Env:disknumber; $d = Get-Disk -Number $n; ` +
		`if ($d.PartitionStyle -eq 'RAW') { Initialize-Disk -Number $n -PartitionStyle GPT }; ` +
		`$p = Get-Partition -DiskNumber $n -ErrorAction SilentlyContinue | Where-Object { $_.Type -ne 'Reserved' }; ` +
		`if (-not $p) { New-Partition -DiskNumber $n -UseMaximumSize | Out-Null }`
	scriptRescan   = `Update-HostStorageCache`
	scriptListIDs  = `Get-Disk | Select-Object Number, UniqueId, SerialNumber | ConvertTo-Json -Compress`
	scriptSize     = `(Get-Disk -Number ([uint32]$Env:disknumber)).Size`
	scriptSetState = `Set-Disk -Number ([uint32]$Env:disknumber) -IsOffline ($Env:diskoffline -eq 'true')`
	scriptGetState = `(Get-Disk -Number ([uint32]$Env:disknumber)).IsOffline`
)

// PowerShell is API on Windows.
type PowerShell struct {
	Runner runner.Runner
}

var _ API = PowerShell{}

func diskEnv(disk uint32) string {
	return runner.Env("disknumber", strconv.FormatUint(uint64(disk), 10))
}

// ListDiskLocations parses Get-Disk locations such as
// "Integrated : Adapter 3 : Port 0 : Target 0 : LUN 1". Disks without a SCSI
// location (e.g. NVMe, virtual) are left out, as CSI Proxy does.
func (p PowerShell) ListDiskLocations(ctx context.Context) (map[uint32]Location, error) {
	out, err := runner.Script(ctx, p.Runner, "Get-Disk", scriptListLocations)
	if err != nil {
		return nil, err
	}
	disks, err := runner.DecodeJSONList[struct {
		Number   uint32
		Location string
	}](out)
	if err != nil {
		return nil, err
	}
	locs := map[uint32]Location{}
	for _, d := range disks {
		if loc, ok := parseLocation(d.Location); ok {
			locs[d.Number] = loc
		}
	}
	return locs, nil
}

func parseLocation(s string) (Location, bool) {
	var loc Location
	found := 0
	for _, part := range strings.Split(s, ":") {
		f := strings.Fields(part)
		if len(f) != 2 {
			continue
		}
		switch strings.ToLower(f[0]) {
		case "adapter":
			loc.Adapter, found = f[1], found+1
		case "port":
			loc.Bus, found = f[1], found+1
		case "target":
			loc.Target, found = f[1], found+1
		case "lun":
			loc.LUNID, found = f[1], found+1
		}
	}
	return loc, found == 4
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

// ListDiskIDs reports UniqueId (page 83) and SerialNumber per disk.
func (p PowerShell) ListDiskIDs(ctx context.Context) (map[uint32]IDs, error) {
	out, err := runner.Script(ctx, p.Runner, "Get-Disk", scriptListIDs)
	if err != nil {
		return nil, err
	}
	disks, err := runner.DecodeJSONList[struct {
		Number       uint32
		UniqueID     string `json:"UniqueId"`
		SerialNumber string
	}](out)
	if err != nil {
		return nil, err
	}
	ids := map[uint32]IDs{}
	for _, d := range disks {
		ids[d.Number] = IDs{Page83: d.UniqueID, SerialNumber: strings.TrimSpace(d.SerialNumber)}
	}
	return ids, nil
}

// GetDiskStats returns the disk's size in bytes.
func (p PowerShell) GetDiskStats(ctx context.Context, disk uint32) (int64, error) {
	out, err := runner.Script(ctx, p.Runner, "Get-Disk", scriptSize, diskEnv(disk))
	if err != nil {
		return 0, err
	}
	n, err := strconv.ParseInt(strings.TrimSpace(string(out)), 10, 64)
	if err != nil {
		return 0, fmt.Errorf("parsing size of disk %d from %q: %w", disk, out, err)
	}
	return n, nil
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
