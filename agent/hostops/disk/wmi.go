package disk

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/pipeguard/pipeguard/agent/hostops/limits"
	"github.com/pipeguard/pipeguard/agent/hostops/wmi"
)

// WMI is Cmdlets through the host's storage management provider (the
// MSFT_Disk, MSFT_Partition and MSFT_StorageSetting classes of
// root\Microsoft\Windows\Storage), in the agent's own process, call by
// call as CSI Proxy 1.3 makes them. Each operation, all its WMI calls
// together, runs under Limits (limits.Call), named after its principal
// method (the Op* names). A WMI with no Conn fails every operation.
type WMI struct {
	// Conn is the connection to the host's WMI service.
	Conn wmi.Conn
	// Limits bounds each operation; nil runs them unbounded.
	Limits limits.Limiter
}

var _ Cmdlets = WMI{}

// The operations' names, as Limits is given them.
const (
	OpPartitionDisk = "MSFT_Disk.CreatePartition"
	OpRescan        = "MSFT_StorageSetting.UpdateHostStorageCache"
	OpOnline        = "MSFT_Disk.Online"
	OpOffline       = "MSFT_Disk.Offline"
	OpGetDiskState  = "MSFT_Disk.IsOffline"
)

// The GPT partition types PartitionDisk tells apart.
const (
	gptBasicData         = "{ebd0a0a2-b9e5-4433-87c0-68b6b72699c7}"
	gptMicrosoftReserved = "{e3c9e316-0b5c-4db8-817d-f92df00215ae}"
)

// The partition styles of MSFT_Disk.PartitionStyle.
const (
	styleRAW uint16 = 0
	styleGPT uint16 = 2
)

// The methods' own return codes, as Microsoft documents each (the ones
// they share are wmi.CommonReturnCodes).
var (
	initializeCodes = map[uint32]string{
		6:     "Disk is in use",
		41001: "The disk has already been initialized",
		41010: "The specified partition type is not valid",
		41014: "The disk is not large enough to support a GPT partition style",
		41018: clustered,
	}
	createPartitionCodes = map[uint32]string{
		6:     "Disk is in use",
		4097:  "Size Not Supported",
		40000: "Not enough free space",
		40005: "You must specify a size by using either the Size or the UseMaximumSize parameter, one of them only",
		41000: "The disk has not been initialized",
		41002: "The disk is read only",
		41003: "The disk is offline",
		41004: "The disk's partition limit has been reached",
		41005: "The specified partition alignment is not valid; it must be a multiple of the disk's sector size",
		41006: "A parameter is not valid for this type of partition",
		41010: "The specified partition type is not valid",
		41011: "Only the first 2 TB are usable on MBR disks",
		41012: "The specified offset is not valid",
		41015: "There is no media in the device",
		41016: "The specified offset is not valid",
		41017: "The specified partition layout is invalid",
		41018: clustered,
		42002: "The requested access path is already in use",
		42004: "Cannot assign access paths to hidden partitions",
		42007: "The access path is not valid",
	}
	refreshCodes = map[uint32]string{
		6:     "Disk is in use",
		41000: "The disk has not been initialized",
		41003: "The disk is offline",
	}
	onlineCodes = map[uint32]string{
		6:     "Disk is in use",
		41018: clustered,
	}
	offlineCodes = map[uint32]string{
		6:     "Disk is in use",
		41009: "Operation not supported on a critical disk",
		41018: clustered,
	}
	partitionOnlineCodes = map[uint32]string{
		6:     "In Use",
		42011: "This operation is only supported on data partitions",
	}
)

const clustered = "The specified object is managed by the Microsoft Failover Clustering component; the disk must be in cluster maintenance mode and the cluster resource online"

// Codes that leave the disk as the operation wants it.
const (
	codeAlreadyInitialized uint32 = 41001
	codeAccessPathInUse    uint32 = 42002
)

// run runs fn, the operation op, under the limits, on a connection.
func (w WMI) run(ctx context.Context, op string, fn func(ctx context.Context) error) error {
	return wmi.Run(ctx, w.Conn, w.Limits, op, fn)
}

// disk returns MSFT_Disk number n.
func (w WMI) disk(ctx context.Context, n uint32) (wmi.Object, error) {
	got, err := w.Conn.Query(ctx, wmi.NamespaceStorage, fmt.Sprintf("SELECT * FROM MSFT_Disk WHERE Number = %d", n))
	if err != nil {
		return wmi.Object{}, fmt.Errorf("looking up disk %d: %w", n, err)
	}
	switch len(got) {
	case 0:
		return wmi.Object{}, fmt.Errorf("the host has no disk %d", n)
	case 1:
		return got[0], nil
	}
	return wmi.Object{}, fmt.Errorf("disk %d: the host reports %d disks of that number", n, len(got))
}

// call runs method on the object at path and reads its ReturnValue with
// the method's codes; ok are codes that count as success.
func (w WMI) call(ctx context.Context, path, op string, codes map[uint32]string, ok []uint32, in ...wmi.Param) (wmi.Object, error) {
	out, err := wmi.Invoke(ctx, w.Conn, wmi.NamespaceStorage, path, op, wmi.Codes{Text: codes}, in...)
	var me *wmi.MethodError
	if errors.As(err, &me) && slices.Contains(ok, me.Code) {
		return out, nil
	}
	return out, err
}

// PartitionDisk initializes a raw disk as GPT and creates one basic data
// partition filling it, unless it has a partition other than a Microsoft
// reserved one, as CSI Proxy does: MSFT_Disk.Initialize when
// PartitionStyle is RAW, MSFT_Disk.CreatePartition with UseMaximumSize
// and no drive letter, MSFT_Disk.Refresh, then MSFT_Partition.Online of
// the new partition. A disk that another caller initialized meanwhile
// (41001) is taken as initialized, and a partition created without its
// drive letter (42002) as created. A partition with no GptType (an MBR
// disk's) counts as one, as Get-Partition's listing counts it.
func (w WMI) PartitionDisk(ctx context.Context, n uint32) error {
	return w.run(ctx, OpPartitionDisk, func(ctx context.Context) error {
		d, err := w.disk(ctx, n)
		if err != nil {
			return fmt.Errorf("partitioning disk %d: %w", n, err)
		}
		style, ok := wmi.Uint32(d.Props["PartitionStyle"])
		if !ok {
			return fmt.Errorf("partitioning disk %d: its PartitionStyle is %v (%T), want a partition style", n, d.Props["PartitionStyle"], d.Props["PartitionStyle"])
		}
		if style == uint32(styleRAW) {
			if _, err := w.call(ctx, d.Path, "MSFT_Disk.Initialize", initializeCodes, []uint32{codeAlreadyInitialized},
				wmi.Param{Name: "PartitionStyle", Value: styleGPT}); err != nil {
				return fmt.Errorf("initializing disk %d as GPT: %w", n, err)
			}
		}
		parts, err := w.dataPartitions(ctx, n)
		if err != nil || len(parts) > 0 {
			return err
		}
		if _, err := w.call(ctx, d.Path, "MSFT_Disk.CreatePartition", createPartitionCodes, []uint32{codeAccessPathInUse},
			wmi.Param{Name: "UseMaximumSize", Value: true},
			wmi.Param{Name: "AssignDriveLetter", Value: false},
			wmi.Param{Name: "GptType", Value: gptBasicData},
			wmi.Param{Name: "IsHidden", Value: false},
			wmi.Param{Name: "IsActive", Value: false}); err != nil {
			return fmt.Errorf("creating a partition on disk %d: %w", n, err)
		}
		if _, err := w.call(ctx, d.Path, "MSFT_Disk.Refresh", refreshCodes, nil); err != nil {
			return fmt.Errorf("refreshing disk %d after creating its partition: %w", n, err)
		}
		parts, err = w.dataPartitions(ctx, n)
		if err != nil {
			return err
		}
		if len(parts) == 0 {
			return fmt.Errorf("disk %d shows no partition after one was created", n)
		}
		if _, err := w.call(ctx, parts[0].Path, "MSFT_Partition.Online", partitionOnlineCodes, nil); err != nil {
			return fmt.Errorf("bringing the new partition of disk %d online: %w", n, err)
		}
		return nil
	})
}

// dataPartitions returns disk n's partitions but its Microsoft reserved
// ones, in the order the host lists them.
func (w WMI) dataPartitions(ctx context.Context, n uint32) ([]wmi.Object, error) {
	got, err := w.Conn.Query(ctx, wmi.NamespaceStorage, fmt.Sprintf("SELECT * FROM MSFT_Partition WHERE DiskNumber = %d", n))
	if err != nil {
		return nil, fmt.Errorf("listing the partitions of disk %d: %w", n, err)
	}
	var out []wmi.Object
	for _, p := range got {
		if g, _ := p.Props["GptType"].(string); !strings.EqualFold(g, gptMicrosoftReserved) {
			out = append(out, p)
		}
	}
	return out, nil
}

// Rescan runs MSFT_StorageSetting.UpdateHostStorageCache: the host
// enumerates its disks, partitions and volumes again.
func (w WMI) Rescan(ctx context.Context) error {
	return w.run(ctx, OpRescan, func(ctx context.Context) error {
		// The method documents no return values of its own.
		if _, err := w.call(ctx, "", OpRescan, nil, nil); err != nil {
			return fmt.Errorf("rescanning the host's disks: %w", err)
		}
		return nil
	})
}

// SetDiskState brings a disk online or offline (MSFT_Disk.Online or
// Offline), unless it already is.
func (w WMI) SetDiskState(ctx context.Context, n uint32, online bool) error {
	op, codes, want := OpOffline, offlineCodes, "offline"
	if online {
		op, codes, want = OpOnline, onlineCodes, "online"
	}
	return w.run(ctx, op, func(ctx context.Context) error {
		d, err := w.disk(ctx, n)
		if err != nil {
			return fmt.Errorf("bringing disk %d %s: %w", n, want, err)
		}
		offline, err := isOffline(d, n)
		if err != nil {
			return err
		}
		if online == !offline {
			return nil
		}
		if _, err := w.call(ctx, d.Path, op, codes, nil); err != nil {
			return fmt.Errorf("bringing disk %d %s: %w", n, want, err)
		}
		return nil
	})
}

// GetDiskState reports whether a disk is online: MSFT_Disk.IsOffline.
func (w WMI) GetDiskState(ctx context.Context, n uint32) (bool, error) {
	var online bool
	err := w.run(ctx, OpGetDiskState, func(ctx context.Context) error {
		d, err := w.disk(ctx, n)
		if err != nil {
			return fmt.Errorf("reading the state of disk %d: %w", n, err)
		}
		offline, err := isOffline(d, n)
		online = !offline
		return err
	})
	if err != nil {
		// fn may still run on when Limits gave up on it: online is read
		// only once it has returned.
		return false, err
	}
	return online, nil
}

func isOffline(d wmi.Object, n uint32) (bool, error) {
	v, ok := d.Props["IsOffline"].(bool)
	if !ok {
		return false, fmt.Errorf("disk %d reports IsOffline %v (%T), want a boolean", n, d.Props["IsOffline"], d.Props["IsOffline"])
	}
	return v, nil
}
