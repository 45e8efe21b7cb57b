package volume

import (
	"context"
	"errors"
	"reflect"
	"testing"
	"time"

	"github.com/pipeguard/pipeguard/agent/hostops/limits"
	"github.com/pipeguard/pipeguard/agent/hostops/win32"
	"github.com/pipeguard/pipeguard/internal/testing/win32test"
	"github.com/pipeguard/pipeguard/internal/testing/wmitest"
)

// The volumes of the native tests: A and B on disk 1 (partitions 2 and 1,
// A listed first), C on disk 2 with drive letter C:, a volume spanning
// disks 1 and 3, an unformatted one on disk 4, and a DVD volume that
// answers no extents.
const (
	volA    = `\\?\Volume{aaaaaaaa-0000-0000-0000-000000000001}\`
	volB    = `\\?\Volume{bbbbbbbb-0000-0000-0000-000000000002}\`
	volC    = `\\?\Volume{cccccccc-0000-0000-0000-000000000003}\`
	volSpan = `\\?\Volume{dddddddd-0000-0000-0000-000000000004}\`
	volRaw  = `\\?\Volume{eeeeeeee-0000-0000-0000-000000000005}\`
	volDVD  = `\\?\Volume{ffffffff-0000-0000-0000-000000000006}\`
	missing = `\\?\Volume{99999999-9999-9999-9999-999999999999}\`
)

type fixture struct {
	host *win32test.Host
	wmi  *wmitest.Provider
	st   *wmitest.Storage
	n    Native
}

func newFixture(t *testing.T) fixture {
	t.Helper()
	h := win32test.New()
	ext := func(disk uint32, off int64) []win32.DiskExtent {
		return []win32.DiskExtent{{DiskNumber: disk, StartingOffset: off, ExtentLength: 1 << 30}}
	}
	h.AddVolume(win32test.Volume{ID: volA, Extents: ext(1, 2<<30), PartitionNumber: 2, FileSystem: "NTFS", Total: 1000, Free: 400})
	h.AddVolume(win32test.Volume{ID: volB, Extents: ext(1, 1<<20), PartitionNumber: 1, FileSystem: "NTFS", Total: 10, Free: 10})
	h.AddVolume(win32test.Volume{ID: volC, Extents: ext(2, 1<<20), PartitionNumber: 3, FileSystem: "NTFS", Total: 1 << 40, Free: 1 << 39})
	h.AddVolume(win32test.Volume{ID: volSpan, Extents: append(ext(3, 0), ext(1, 5<<30)...), FileSystem: "NTFS"})
	h.AddVolume(win32test.Volume{ID: volRaw, Extents: ext(4, 1<<20), PartitionNumber: 1})
	h.AddVolume(win32test.Volume{ID: volDVD})
	h.Answer(win32.VolumeDevice(volDVD), win32.IOCTL_VOLUME_GET_VOLUME_DISK_EXTENTS, nil, win32test.Fail(
		win32.DeviceIoControlFunc(win32.IOCTL_VOLUME_GET_VOLUME_DISK_EXTENTS), win32.VolumeDevice(volDVD), win32test.ErrInvalidFunction))
	h.AddDrive(`C:\`, volC)
	p := wmitest.New()
	st := wmitest.AddStorage(p)
	l := limits.Bound("volume", limits.Limits{Timeout: 5 * time.Second, Concurrency: 8})
	return fixture{host: h, wmi: p, st: st, n: Native{deps: Deps{Sys: h, Limits: l, Cmdlets: WMI{Conn: p, Limits: l}}}}
}

// Every native operation answers from Win32 calls alone: the WMI provider
// behind Cmdlets is asked nothing.
func TestNativeResults(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t)
	n := f.n
	type stats struct{ Total, Used int64 }
	steps := []struct {
		name string
		call func() (any, error)
		want any
	}{
		{"MountVolume", func() (any, error) { return nil, n.MountVolume(ctx, volA, `C:\var\lib\kubelet\plugins\staging`) }, nil},
		{"mount points", func() (any, error) { return f.host.MountPoints(), nil }, map[string]string{`C:\var\lib\kubelet\plugins\staging\`: volA}},
		{"GetVolumeIDFromTargetPath", func() (any, error) { return n.GetVolumeIDFromTargetPath(ctx, `C:\var\lib\kubelet\plugins\staging`) }, volA},
		{"GetClosestVolumeIDFromTargetPath below the mount", func() (any, error) {
			return n.GetClosestVolumeIDFromTargetPath(ctx, `C:\var\lib\kubelet\plugins\staging\a\b`)
		}, volA},
		{"GetClosestVolumeIDFromTargetPath on the drive", func() (any, error) {
			return n.GetClosestVolumeIDFromTargetPath(ctx, `C:\var\lib\kubelet\pods`)
		}, volC},
		{"IsVolumeFormatted NTFS", func() (any, error) { return n.IsVolumeFormatted(ctx, volA) }, true},
		{"IsVolumeFormatted RAW", func() (any, error) { return n.IsVolumeFormatted(ctx, volRaw) }, false},
		{"GetVolumeStats", func() (any, error) { total, used, err := n.GetVolumeStats(ctx, volA); return stats{total, used}, err }, stats{1000, 600}},
		{"GetVolumeStats without the trailing backslash", func() (any, error) {
			total, used, err := n.GetVolumeStats(ctx, volC[:len(volC)-1])
			return stats{total, used}, err
		}, stats{1 << 40, 1 << 39}},
		{"GetDiskNumberFromVolumeID", func() (any, error) { return n.GetDiskNumberFromVolumeID(ctx, volC) }, uint32(2)},
		{"GetDiskNumberFromVolumeID spanned: the first extent", func() (any, error) { return n.GetDiskNumberFromVolumeID(ctx, volSpan) }, uint32(3)},
		{"ListVolumesOnDisk: partition order, the spanned volume last", func() (any, error) { return n.ListVolumesOnDisk(ctx, 1, 0) }, []string{volB, volA, volSpan}},
		{"ListVolumesOnDisk one partition", func() (any, error) { return n.ListVolumesOnDisk(ctx, 1, 2) }, []string{volA}},
		{"ListVolumesOnDisk a partition without a volume", func() (any, error) { return n.ListVolumesOnDisk(ctx, 1, 7) }, []string{}},
		{"ListVolumesOnDisk the spanned volume's other disk", func() (any, error) { return n.ListVolumesOnDisk(ctx, 3, 0) }, []string{volSpan}},
		{"WriteVolumeCache", func() (any, error) { return nil, n.WriteVolumeCache(ctx, volB) }, nil},
		{"flushes of B", func() (any, error) { return f.host.Flushes(volB), nil }, 1},
		{"UnmountVolume", func() (any, error) { return nil, n.UnmountVolume(ctx, volA, `C:\var\lib\kubelet\plugins\staging`) }, nil},
		{"flushes of A", func() (any, error) { return f.host.Flushes(volA), nil }, 1},
		{"mount points after", func() (any, error) { return f.host.MountPoints(), nil }, map[string]string{}},
	}
	for _, s := range steps {
		got, err := s.call()
		if err != nil {
			t.Fatalf("%s: %v", s.name, err)
		}
		if !reflect.DeepEqual(got, s.want) {
			t.Fatalf("%s = %#v, want %#v", s.name, got, s.want)
		}
	}
	if calls, queries := f.wmi.Calls(), f.wmi.Queries(); len(calls) != 0 || len(queries) != 0 {
		t.Fatalf("the native operations went through WMI: calls %v, queries %q", calls, queries)
	}
	// UnmountVolume flushed, then removed the mount point.
	var order []string
	for _, c := range f.host.Calls() {
		if c.Func == "FlushFileBuffers" && c.Path == win32.VolumeDevice(volA) || c.Func == "DeleteVolumeMountPointW" {
			order = append(order, c.Func+" "+c.Path)
		}
	}
	want := []string{`FlushFileBuffers \\?\Volume{aaaaaaaa-0000-0000-0000-000000000001}`, `DeleteVolumeMountPointW C:\var\lib\kubelet\plugins\staging\`}
	if !reflect.DeepEqual(order, want) {
		t.Fatalf("UnmountVolume called %q, want %q", order, want)
	}
}

// FormatVolume and ResizeVolume, which have no Win32 equivalent, reach the
// WMI implementation, and make no Win32 call: the raw volume is formatted
// NTFS, volume A's partition grows to 2 GiB.
func TestNativeFormatAndResizeRunCmdlets(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t)
	raw := f.st.AddVolume(f.st.AddPartition(f.st.AddDisk(4, 4<<30, 2), 1<<30, wmitest.GPTBasicData), volRaw, "")
	partA := f.st.AddPartition(f.st.AddDisk(1, 8<<30, 2), 1<<30, wmitest.GPTBasicData)
	f.st.AddVolume(partA, volA, "NTFS")
	if err := f.n.FormatVolume(ctx, volRaw); err != nil {
		t.Fatal(err)
	}
	if err := f.n.ResizeVolume(ctx, volA, 1<<31); err != nil {
		t.Fatal(err)
	}
	var methods []string
	for _, c := range f.wmi.Calls() {
		methods = append(methods, c.Method)
	}
	if want := []string{"MSFT_Volume.Format", "MSFT_Partition.Resize", "MSFT_Disk.Refresh"}; !reflect.DeepEqual(methods, want) {
		t.Fatalf("called %q\nwant %q", methods, want)
	}
	if fs := f.st.Prop(raw, "FileSystem"); fs != "NTFS" {
		t.Errorf("the formatted volume's file system is %v, want NTFS", fs)
	}
	if size := f.st.Prop(partA, "Size"); size != uint64(1<<31) {
		t.Errorf("volume A's partition is %v bytes, want %d", size, 1<<31)
	}
	if calls := f.host.Calls(); len(calls) != 0 {
		t.Fatalf("Win32 calls made: %v", calls)
	}
}

// A Win32 call that never returns is answered at the group's deadline, on
// the stop paths too, naming the call and the setting.
func TestNativeHungCallAnswersAtTheDeadline(t *testing.T) {
	f := newFixture(t)
	release := make(chan struct{})
	defer close(release)
	f.host.Before = func(c win32test.Call) error {
		if c.Func == "GetDiskFreeSpaceExW" || c.Func == "FlushFileBuffers" {
			<-release
		}
		return nil
	}
	f.n.Limits = limits.Bound("volume", limits.Limits{Timeout: 100 * time.Millisecond, Concurrency: 8, Setting: "--host-call-timeout-volume"})
	ctx := context.Background()
	if err := f.n.MountVolume(ctx, volA, `C:\mnt`); err != nil {
		t.Fatal(err)
	}
	cases := map[string]struct {
		call func() error
		want string
	}{
		"GetVolumeStats": {func() error { _, _, err := f.n.GetVolumeStats(ctx, volA); return err },
			`reading the size of volume \\?\Volume{aaaaaaaa-0000-0000-0000-000000000001}\: volume GetDiskFreeSpaceExW did not finish within 100ms (host operation deadline; --host-call-timeout-volume)`},
		"UnmountVolume": {func() error { return f.n.UnmountVolume(ctx, volA, `C:\mnt`) },
			`unmounting volume \\?\Volume{aaaaaaaa-0000-0000-0000-000000000001}\ from C:\mnt: the volume's cache was not flushed, so it stays mounted: volume FlushFileBuffers did not finish within 100ms (host operation deadline; --host-call-timeout-volume)`},
	}
	for name, tc := range cases {
		start := time.Now()
		err := tc.call()
		if took := time.Since(start); took > 2*time.Second {
			t.Errorf("%s answered after %v", name, took)
		}
		if err == nil || err.Error() != tc.want || !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("%s: %v\nwant %q (a context.DeadlineExceeded)", name, err, tc.want)
		}
	}
	if len(f.host.MountPoints()) != 1 {
		t.Fatalf("the mount point went away although the flush never ended: %v", f.host.MountPoints())
	}
}

// A volume on more disks than the first buffer holds is asked again with
// the room its first answer (ERROR_MORE_DATA) says it needs.
func TestNativeManyExtents(t *testing.T) {
	f := newFixture(t)
	const wide = `\\?\Volume{77777777-0000-0000-0000-000000000007}\`
	var ext []win32.DiskExtent
	for d := uint32(10); d < 30; d++ {
		ext = append(ext, win32.DiskExtent{DiskNumber: d, StartingOffset: int64(d) << 20, ExtentLength: 1 << 20})
	}
	f.host.AddVolume(win32test.Volume{ID: wide, Extents: ext})
	ctx := context.Background()
	if d, err := f.n.GetDiskNumberFromVolumeID(ctx, wide); err != nil || d != 10 {
		t.Fatalf("GetDiskNumberFromVolumeID = %d, %v", d, err)
	}
	if vols, err := f.n.ListVolumesOnDisk(ctx, 29, 0); err != nil || !reflect.DeepEqual(vols, []string{wide}) {
		t.Fatalf("ListVolumesOnDisk of the last extent's disk = %v, %v", vols, err)
	}
	var sizes int
	for _, c := range f.host.Calls() {
		if c.Path == win32.VolumeDevice(wide) && c.Func == win32.DeviceIoControlFunc(win32.IOCTL_VOLUME_GET_VOLUME_DISK_EXTENTS) {
			sizes++
		}
	}
	if sizes != 4 {
		t.Fatalf("the extents were asked for %d times, want 4 (twice per call)", sizes)
	}
}
