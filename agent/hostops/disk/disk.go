package disk

import (
	"context"
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

// Cmdlets is what the disk group does through WMI (WMI), having no Win32
// call for it here: partitioning, rescanning and the online state, which
// PowerShell's storage cmdlets also do through those WMI methods. Native
// runs everything else.
type Cmdlets interface {
	PartitionDisk(ctx context.Context, disk uint32) error
	Rescan(ctx context.Context) error
	SetDiskState(ctx context.Context, disk uint32, online bool) error
	GetDiskState(ctx context.Context, disk uint32) (online bool, err error)
}
