package disk

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/pipeguard/pipeguard/agent/hostops/limits"
	"github.com/pipeguard/pipeguard/agent/hostops/win32"
	"github.com/pipeguard/pipeguard/internal/testing/win32test"
	"github.com/pipeguard/pipeguard/internal/testing/wmitest"
)

// bigDescriptor holds 300 port identifiers before the device's NAA: over
// the 4 KiB the first query asks for.
func bigDescriptor() []byte {
	ids := make([]ident, 0, 301)
	for range 300 {
		ids = append(ids, portNAA)
	}
	return descriptor(append(ids, naa5)...)
}

type fixture struct {
	host *win32test.Host
	wmi  *wmitest.Provider
	st   *wmitest.Storage
	n    Native
}

// newFixture is a host of four disks: 0 an NVMe disk on no SCSI port, 1
// a Virtual and 2 a SAS disk (2 without page 83 data), 3 a SCSI disk whose
// page 83 descriptor is larger than the first query's buffer.
func newFixture(t *testing.T) fixture {
	t.Helper()
	h := win32test.New()
	h.AddDisk(win32test.Disk{Number: 0, Bus: win32.BusTypeNvme, Page83: descriptor(eui64), Serial: "  S4EWNX0N123456  ", Size: 512 << 30})
	h.AddDisk(win32test.Disk{Number: 1, Bus: win32.BusTypeVirtual, SCSI: &win32.SCSIAddress{PortNumber: 3, PathId: 0, TargetId: 0, Lun: 1},
		Page83: descriptor(naa6), Vendor: "Msft", Product: "Virtual Disk", Serial: "6002248066c7a8e3", Size: 32 << 30})
	h.AddDisk(win32test.Disk{Number: 2, Bus: win32.BusTypeSas, SCSI: &win32.SCSIAddress{PortNumber: 1, PathId: 2, TargetId: 3, Lun: 4}, Size: 1 << 30})
	h.AddDisk(win32test.Disk{Number: 3, Bus: win32.BusTypeScsi, SCSI: &win32.SCSIAddress{PortNumber: 255, PathId: 255, TargetId: 255, Lun: 255},
		Page83: bigDescriptor(), Serial: "BIG", Size: 1})
	p := wmitest.New()
	st := wmitest.AddStorage(p)
	l := limits.Bound("disk", limits.Limits{Timeout: 5 * time.Second, Concurrency: 8})
	return fixture{host: h, wmi: p, st: st, n: Native{deps: Deps{Sys: h, Limits: l, Cmdlets: WMI{Conn: p, Limits: l}}}}
}

func TestNativeDiskResults(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t)
	locs, err := f.n.ListDiskLocations(ctx)
	wantLocs := map[uint32]Location{
		1: {Adapter: "3", Target: "0", LUNID: "1"},
		2: {Adapter: "1", Target: "3", LUNID: "4"},
		3: {Adapter: "255", Target: "255", LUNID: "255"},
	}
	if err != nil || !reflect.DeepEqual(locs, wantLocs) {
		t.Fatalf("ListDiskLocations = %v, %v\nwant %v", locs, err, wantLocs)
	}
	ids, err := f.n.ListDiskIDs(ctx)
	wantIDs := map[uint32]IDs{
		0: {Page83: "0025385b71b01234", SerialNumber: "S4EWNX0N123456"},
		1: {Page83: "6001405a1b2c3d4e5f60718293a4b5c6", SerialNumber: "6002248066c7a8e3"},
		2: {Page83: "", SerialNumber: ""},
		3: {Page83: "5000c50012345678", SerialNumber: "BIG"},
	}
	if err != nil || !reflect.DeepEqual(ids, wantIDs) {
		t.Fatalf("ListDiskIDs = %v, %v\nwant %v", ids, err, wantIDs)
	}
	size, err := f.n.GetDiskStats(ctx, 1)
	if err != nil || size != 32<<30 {
		t.Fatalf("GetDiskStats = %d, %v", size, err)
	}
	if calls, queries := f.wmi.Calls(), f.wmi.Queries(); len(calls) != 0 || len(queries) != 0 {
		t.Fatalf("the native operations went through WMI: calls %v, queries %q", calls, queries)
	}
	// Disk 3's descriptor was asked for twice: 4 KiB, then its Size.
	queries := 0
	for _, c := range f.host.Calls() {
		if c.Path == `\\.\PhysicalDrive3` && c.Func == "DeviceIoControl(IOCTL_STORAGE_QUERY_PROPERTY)" {
			queries++
		}
	}
	if queries != 4 {
		t.Fatalf("disk 3 was queried %d times, want 4 (its bus type, page 83 twice, the serial)", queries)
	}
}

// PartitionDisk, Rescan, SetDiskState and GetDiskState reach the WMI
// implementation, and make no Win32 call: a raw, offline disk 7 is
// initialized as GPT and given one data partition, the host rescanned,
// the disk brought online and read as online.
func TestNativeDiskCmdlets(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t)
	d := f.st.AddDisk(7, 8<<30, 0)
	f.st.Set(d, "IsOffline", true)
	if online, err := f.n.GetDiskState(ctx, 7); err != nil || online {
		t.Fatalf("GetDiskState of the offline disk = %v, %v", online, err)
	}
	f.st.Set(d, "IsOffline", false)
	if err := f.n.PartitionDisk(ctx, 7); err != nil {
		t.Fatal(err)
	}
	if err := f.n.Rescan(ctx); err != nil {
		t.Fatal(err)
	}
	f.st.Set(d, "IsOffline", true)
	if err := f.n.SetDiskState(ctx, 7, true); err != nil {
		t.Fatal(err)
	}
	if online, err := f.n.GetDiskState(ctx, 7); err != nil || !online {
		t.Fatalf("GetDiskState = %v, %v", online, err)
	}
	var methods []string
	for _, c := range f.wmi.Calls() {
		methods = append(methods, c.Method)
	}
	want := []string{"MSFT_Disk.Initialize", "MSFT_Disk.CreatePartition", "MSFT_Disk.Refresh", "MSFT_Partition.Online",
		"MSFT_StorageSetting.UpdateHostStorageCache", "MSFT_Disk.Online"}
	if !reflect.DeepEqual(methods, want) {
		t.Fatalf("called %q\nwant %q", methods, want)
	}
	if style := f.st.Prop(d, "PartitionStyle"); style != uint16(2) {
		t.Errorf("disk 7's partition style is %v, want GPT (2)", style)
	}
	if calls := f.host.Calls(); len(calls) != 0 {
		t.Fatalf("Win32 calls made: %v", calls)
	}
}

func TestNativeDiskErrors(t *testing.T) {
	ctx := context.Background()
	cases := map[string]struct {
		setup func(f fixture)
		call  func(n Native) error
		want  string
	}{
		"size of a missing disk": {
			call: func(n Native) error { _, err := n.GetDiskStats(ctx, 9); return err },
			want: `reading the size of disk 9: CreateFileW \\.\PhysicalDrive9: The system cannot find the file specified.`,
		},
		"truncated size": {
			setup: func(f fixture) {
				f.host.Answer(`\\.\PhysicalDrive1`, win32.IOCTL_DISK_GET_LENGTH_INFO, []byte{1, 2, 3, 4}, nil)
			},
			call: func(n Native) error { _, err := n.GetDiskStats(ctx, 1); return err },
			want: `reading the size of disk 1: GET_LENGTH_INFORMATION: length at offset 0: 4 bytes were returned, the structure takes 8 (truncated answer)`,
		},
		"negative size": {
			setup: func(f fixture) { f.host.AddDisk(win32test.Disk{Number: 1, Size: -1}) },
			call:  func(n Native) error { _, err := n.GetDiskStats(ctx, 1); return err },
			want:  `reading the size of disk 1: GET_LENGTH_INFORMATION: Length at offset 0: -1 is negative`,
		},
		"the drive list fails": {
			setup: func(f fixture) {
				f.host.Before = func(c win32test.Call) error {
					if c.Func == "QueryDosDeviceW" {
						return win32test.Fail(c.Func, "", win32test.ErrAccessDenied)
					}
					return nil
				}
			},
			call: func(n Native) error { _, err := n.ListDiskLocations(ctx); return err },
			want: `listing the disks: QueryDosDeviceW: Access is denied.`,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			f := newFixture(t)
			if tc.setup != nil {
				tc.setup(f)
			}
			err := tc.call(f.n)
			if err == nil || err.Error() != tc.want {
				t.Fatalf("%v\nwant %q", err, tc.want)
			}
			if calls, queries := f.wmi.Calls(), f.wmi.Queries(); len(calls) != 0 || len(queries) != 0 {
				t.Fatalf("went through WMI: calls %v, queries %q", calls, queries)
			}
		})
	}
}

// A drive that went away since it was listed, or answers no SCSI address,
// is left out.
func TestNativeDiskListsLeaveOutGoneDrives(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t)
	gone := win32test.Fail("CreateFileW", `\\.\PhysicalDrive1`, win32test.ErrFileNotFound)
	f.host.Answer(`\\.\PhysicalDrive1`, win32.IOCTL_SCSI_GET_ADDRESS, nil, gone)
	f.host.Answer(`\\.\PhysicalDrive1`, win32.IOCTL_STORAGE_QUERY_PROPERTY, nil, gone)
	locs, err := f.n.ListDiskLocations(ctx)
	if err != nil || len(locs) != 2 || locs[1] != (Location{}) {
		t.Fatalf("ListDiskLocations = %v, %v", locs, err)
	}
	ids, err := f.n.ListDiskIDs(ctx)
	if _, ok := ids[1]; err != nil || ok || len(ids) != 3 {
		t.Fatalf("ListDiskIDs = %v, %v", ids, err)
	}
}

// A disk IOCTL that never returns is answered at the group's deadline.
func TestNativeDiskHungCallAnswersAtTheDeadline(t *testing.T) {
	f := newFixture(t)
	release := make(chan struct{})
	defer close(release)
	f.host.Before = func(c win32test.Call) error {
		if strings.Contains(c.Func, "IOCTL_SCSI_GET_ADDRESS") {
			<-release
		}
		return nil
	}
	f.n.Limits = limits.Bound("disk", limits.Limits{Timeout: 100 * time.Millisecond, Concurrency: 8, Setting: "--host-call-timeout-disk"})
	start := time.Now()
	_, err := f.n.ListDiskLocations(context.Background())
	if took := time.Since(start); took > 2*time.Second {
		t.Fatalf("answered after %v", took)
	}
	want := `reading the location of disk 0: disk DeviceIoControl(IOCTL_SCSI_GET_ADDRESS) did not finish within 100ms (host operation deadline; --host-call-timeout-disk)`
	if err == nil || err.Error() != want || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("%v\nwant %q", err, want)
	}
}
