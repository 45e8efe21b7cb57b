package volume

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	"github.com/pipeguard/pipeguard/agent/hostops/limits"
	"github.com/pipeguard/pipeguard/agent/hostops/wmi"
)

// WMI is Cmdlets through the host's storage management provider (the
// MSFT_Volume, MSFT_Partition and MSFT_Disk classes of
// root\Microsoft\Windows\Storage), in the agent's own process, call by
// call as CSI Proxy 1.3 makes them. Each operation, all its WMI calls
// together, runs under Limits (limits.Call), named after its principal
// method (OpFormat, OpResize, which share the format cap: FormatOps). A
// WMI with no Conn fails every operation.
type WMI struct {
	// Conn is the connection to the host's WMI service.
	Conn wmi.Conn
	// Limits bounds each operation; nil runs them unbounded.
	Limits limits.Limiter
}

var _ Cmdlets = WMI{}

// The operations' names, as Limits is given them.
const (
	OpFormat = "MSFT_Volume.Format"
	OpResize = "MSFT_Partition.Resize"
)

// minimumGrowth is the least growth ResizeVolume makes, as CSI Proxy: a
// partition within 100 MiB of the size asked is left as it is.
const minimumGrowth = 100 << 20

// The methods' own return codes, as Microsoft documents each (the ones
// they share are wmi.CommonReturnCodes).
var (
	formatCodes = map[uint32]string{
		7:     "This command is not supported on x86 running in x64 environment",
		40004: "An unexpected I/O error has occurred",
		40018: "The specified object is managed by the Microsoft Failover Clustering component; the disk must be in cluster maintenance mode and the cluster resource online",
		42010: "The operation is not allowed on a system or critical partition",
		43000: "The specified cluster size is invalid",
		43001: "The specified file system is not supported",
		43002: "The volume cannot be quick formatted",
		43003: "The number of clusters exceeds 32 bits",
		43004: "The specified UDF version is not supported",
		43005: "The cluster size must be a multiple of the disk's physical sector size",
		43006: "Cannot perform the requested operation when the drive is read only",
		43034: "A code Microsoft lists without a description",
	}
	// resizeCodes are Resize's and GetSupportedSize's.
	resizeCodes = map[uint32]string{
		4097:  "Size Not Supported",
		42008: "Cannot shrink a partition containing a volume with errors",
		42009: "Cannot resize a partition containing an unknown file system",
	}
	refreshCodes = map[uint32]string{
		6:     "Disk is in use",
		41000: "The disk has not been initialized",
		41003: "The disk is offline",
	}
)

func (w WMI) run(ctx context.Context, op string, fn func(ctx context.Context) error) error {
	return wmi.Run(ctx, w.Conn, w.Limits, op, fn)
}

// volume returns the MSFT_Volume whose UniqueId is id. WQL compares
// strings without case; of several matches the one spelt as id is taken,
// and one volume must remain.
func (w WMI) volume(ctx context.Context, id string) (wmi.Object, error) {
	q, err := wmi.Quote(id)
	if err != nil {
		return wmi.Object{}, fmt.Errorf("the volume id cannot be looked up: %w", err)
	}
	got, err := w.Conn.Query(ctx, wmi.NamespaceStorage, "SELECT * FROM MSFT_Volume WHERE UniqueId = "+q)
	if err != nil {
		return wmi.Object{}, fmt.Errorf("looking up the volume: %w", err)
	}
	var exact []wmi.Object
	for _, v := range got {
		if u, _ := v.Props["UniqueId"].(string); u == id {
			exact = append(exact, v)
		}
	}
	if len(exact) > 0 {
		got = exact
	}
	switch len(got) {
	case 0:
		return wmi.Object{}, errors.New("the host has no such volume")
	case 1:
		return got[0], nil
	}
	return wmi.Object{}, fmt.Errorf("the host reports %d volumes of that id", len(got))
}

func (w WMI) call(ctx context.Context, path, op string, codes map[uint32]string, in ...wmi.Param) (wmi.Object, error) {
	return wmi.Invoke(ctx, w.Conn, wmi.NamespaceStorage, path, op, wmi.Codes{Text: codes}, in...)
}

// FormatVolume quick-formats the volume as NTFS with an empty label
// (MSFT_Volume.Format with Full false), as CSI Proxy does. Unlike CSI
// Proxy it does not force the format (Force false): a volume in use,
// mounted and open, say by a pod, is not taken off to be formatted.
func (w WMI) FormatVolume(ctx context.Context, volumeID string) error {
	return w.run(ctx, OpFormat, func(ctx context.Context) error {
		v, err := w.volume(ctx, volumeID)
		if err != nil {
			return fmt.Errorf("formatting volume %s: %w", volumeID, err)
		}
		if _, err := w.call(ctx, v.Path, OpFormat, formatCodes,
			wmi.Param{Name: "FileSystem", Value: "NTFS"},
			wmi.Param{Name: "FileSystemLabel", Value: ""},
			wmi.Param{Name: "Full", Value: false},
			wmi.Param{Name: "Force", Value: false}); err != nil {
			return fmt.Errorf("formatting volume %s: %w", volumeID, err)
		}
		return nil
	})
}

// ResizeVolume grows the volume's partition to sizeBytes, or for 0 to the
// largest size it supports (MSFT_Partition.GetSupportedSize), then
// refreshes its disk's cached layout (MSFT_Disk.Refresh), as CSI Proxy
// does. Like CSI Proxy it never shrinks, and leaves a partition that
// would grow by less than 100 MiB as it is.
func (w WMI) ResizeVolume(ctx context.Context, volumeID string, sizeBytes int64) error {
	return w.run(ctx, OpResize, func(ctx context.Context) error {
		err := w.resize(ctx, volumeID, sizeBytes)
		if err != nil {
			return fmt.Errorf("resizing volume %s: %w", volumeID, err)
		}
		return nil
	})
}

func (w WMI) resize(ctx context.Context, volumeID string, sizeBytes int64) error {
	v, err := w.volume(ctx, volumeID)
	if err != nil {
		return err
	}
	parts, err := w.Conn.Query(ctx, wmi.NamespaceStorage,
		"ASSOCIATORS OF {"+v.Path+"} WHERE AssocClass = MSFT_PartitionToVolume ResultClass = MSFT_Partition")
	if err != nil {
		return fmt.Errorf("looking up its partition: %w", err)
	}
	if len(parts) == 0 {
		return errors.New("the host reports no partition of it")
	}
	part := parts[0]
	current, err := uint64Prop(part.Props, "Size")
	if err != nil {
		return fmt.Errorf("its partition: %w", err)
	}
	if sizeBytes < 0 {
		return nil // smaller than any partition: never shrunk
	}
	want := uint64(sizeBytes)
	if want == 0 {
		out, err := w.call(ctx, part.Path, "MSFT_Partition.GetSupportedSize", resizeCodes)
		if err != nil {
			return err
		}
		if want, err = uint64Prop(out.Props, "SizeMax"); err != nil {
			return fmt.Errorf("MSFT_Partition.GetSupportedSize: %w", err)
		}
	}
	if want <= current || want-current < minimumGrowth {
		return nil
	}
	if _, err := w.call(ctx, part.Path, OpResize, resizeCodes, wmi.Param{Name: "Size", Value: want}); err != nil {
		return err
	}
	n, ok := wmi.Uint32(part.Props["DiskNumber"])
	if !ok {
		return fmt.Errorf("its partition reports DiskNumber %v (%T), want a disk number", part.Props["DiskNumber"], part.Props["DiskNumber"])
	}
	disks, err := w.Conn.Query(ctx, wmi.NamespaceStorage, fmt.Sprintf("SELECT * FROM MSFT_Disk WHERE Number = %d", n))
	if err != nil {
		return fmt.Errorf("looking up its disk %d: %w", n, err)
	}
	if len(disks) != 1 {
		return fmt.Errorf("its disk %d: the host reports %d disks of that number", n, len(disks))
	}
	if _, err := w.call(ctx, disks[0].Path, "MSFT_Disk.Refresh", refreshCodes); err != nil {
		return fmt.Errorf("refreshing its disk %d: %w", n, err)
	}
	return nil
}

// uint64Prop reads an unsigned 64-bit value, which WMI may carry as a
// decimal string (CIM_UINT64).
func uint64Prop(props map[string]any, name string) (uint64, error) {
	switch v := props[name].(type) {
	case uint64:
		return v, nil
	case uint32:
		return uint64(v), nil
	case string:
		if n, err := strconv.ParseUint(v, 10, 64); err == nil {
			return n, nil
		}
	}
	return 0, fmt.Errorf("%s is %v (%T), want a size in bytes", name, props[name], props[name])
}
