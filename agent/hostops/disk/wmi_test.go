package disk

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/pipeguard/pipeguard/agent/hostops/limits"
	"github.com/pipeguard/pipeguard/agent/hostops/wmi"
	"github.com/pipeguard/pipeguard/internal/testing/wmitest"
)

const gib = 1 << 30

func newWMI(t *testing.T) (WMI, *wmitest.Provider, *wmitest.Storage) {
	t.Helper()
	p := wmitest.New()
	return WMI{Conn: p}, p, wmitest.AddStorage(p)
}

// methods lists the methods called, in order, with their in-parameters
// and the types they were sent as.
func methods(p *wmitest.Provider) []string {
	var out []string
	for _, c := range p.Calls() {
		var in []string
		for k, v := range c.In {
			in = append(in, fmt.Sprintf("%s=%T(%v)", k, v, v))
		}
		sort.Strings(in)
		out = append(out, strings.TrimSpace(c.Method+" "+strings.Join(in, " ")))
	}
	return out
}

func waitCall(t *testing.T, p *wmitest.Provider, method string) {
	t.Helper()
	// Poll under a deadline for the condition; the pause only spares the CPU.
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
		for _, c := range p.Calls() {
			if c.Method == method {
				return
			}
		}
	}
	t.Fatalf("no call of %s", method)
}

func TestPartitionDiskInitializesAndPartitionsARawDisk(t *testing.T) {
	w, p, s := newWMI(t)
	d := s.AddDisk(3, 10*gib, 0)
	if err := w.PartitionDisk(context.Background(), 3); err != nil {
		t.Fatal(err)
	}
	want := []string{
		"MSFT_Disk.Initialize PartitionStyle=uint16(2)",
		"MSFT_Disk.CreatePartition AssignDriveLetter=bool(false) GptType=string({ebd0a0a2-b9e5-4433-87c0-68b6b72699c7}) IsActive=bool(false) IsHidden=bool(false) UseMaximumSize=bool(true)",
		"MSFT_Disk.Refresh",
		"MSFT_Partition.Online",
	}
	if got := methods(p); !reflect.DeepEqual(got, want) {
		t.Fatalf("calls:\n%q\nwant\n%q", got, want)
	}
	if got := s.Prop(d, "PartitionStyle"); got != uint16(2) {
		t.Errorf("PartitionStyle %v, want GPT (2)", got)
	}
	parts := p.Instances(wmi.NamespaceStorage, "MSFT_Partition")
	if len(parts) != 1 || s.Prop(parts[0], "Size") != uint64(10*gib) || s.Prop(parts[0], "DiskNumber") != uint32(3) {
		t.Fatalf("partitions %v, want one of the whole disk 3", parts)
	}
	if q := p.Queries(); q[0] != "SELECT * FROM MSFT_Disk WHERE Number = 3" || q[1] != "SELECT * FROM MSFT_Partition WHERE DiskNumber = 3" {
		t.Errorf("queries %q", q)
	}
}

func TestPartitionDiskLeavesAPartitionedDiskAlone(t *testing.T) {
	for name, gpt := range map[string]string{"GPT basic data": wmitest.GPTBasicData, "MBR, no GptType": "", "other GPT type": "{de94bba4-06d1-4d40-a16a-bfd50179d6ac}"} {
		t.Run(name, func(t *testing.T) {
			w, p, s := newWMI(t)
			style := uint16(2)
			if gpt == "" {
				style = 1
			}
			s.AddPartition(s.AddDisk(3, 10*gib, style), gib, gpt)
			if err := w.PartitionDisk(context.Background(), 3); err != nil {
				t.Fatal(err)
			}
			if c := p.Calls(); len(c) != 0 {
				t.Fatalf("calls %v, want none", methods(p))
			}
		})
	}
}

// A disk that holds only a Microsoft reserved partition gets its data
// partition; an initialized disk is not initialized again.
func TestPartitionDiskSkipsTheReservedPartition(t *testing.T) {
	w, p, s := newWMI(t)
	s.AddPartition(s.AddDisk(4, 10*gib, 2), 16<<20, strings.ToUpper(wmitest.GPTMicrosoftReserved))
	if err := w.PartitionDisk(context.Background(), 4); err != nil {
		t.Fatal(err)
	}
	got := methods(p)
	if len(got) != 3 || !strings.HasPrefix(got[0], "MSFT_Disk.CreatePartition ") {
		t.Fatalf("calls %q, want CreatePartition, Refresh, Online", got)
	}
	if n := len(p.Instances(wmi.NamespaceStorage, "MSFT_Partition")); n != 2 {
		t.Fatalf("%d partitions, want the reserved one and a new one", n)
	}
}

// Another caller initializing the disk between the look and the call
// (41001) is no failure: the disk is initialized.
func TestPartitionDiskTakesAlreadyInitializedAsDone(t *testing.T) {
	w, p, s := newWMI(t)
	d := s.AddDisk(3, 10*gib, 0)
	release := p.Hold("MSFT_Disk", "Initialize")
	done := make(chan error, 1)
	go func() { done <- w.PartitionDisk(context.Background(), 3) }()
	waitCall(t, p, "MSFT_Disk.Initialize")
	s.Set(d, "PartitionStyle", uint16(2))
	release()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if n := len(p.Instances(wmi.NamespaceStorage, "MSFT_Partition")); n != 1 {
		t.Fatalf("%d partitions, want 1", n)
	}
}

// 42002 is a partition created without its access path: created.
func TestPartitionDiskTakesAccessPathInUseAsCreated(t *testing.T) {
	w, p, s := newWMI(t)
	d := s.AddDisk(3, 10*gib, 2)
	s.Fail("MSFT_Disk.CreatePartition", 42002, "drive letter taken")
	release := p.Hold("MSFT_Disk", "CreatePartition")
	done := make(chan error, 1)
	go func() { done <- w.PartitionDisk(context.Background(), 3) }()
	waitCall(t, p, "MSFT_Disk.CreatePartition")
	s.AddPartition(d, 10*gib, wmitest.GPTBasicData) // what the host made
	release()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	// Without the partition it did not create, the operation says so.
	w, _, s = newWMI(t)
	s.AddDisk(3, 10*gib, 2)
	s.Fail("MSFT_Disk.CreatePartition", 42002, "")
	if err := w.PartitionDisk(context.Background(), 3); err == nil || err.Error() != "disk 3 shows no partition after one was created" {
		t.Fatalf("got %v", err)
	}
}

func TestMissingDisk(t *testing.T) {
	w, p, s := newWMI(t)
	s.AddDisk(2, gib, 2)
	for name, call := range map[string]func() error{
		"PartitionDisk": func() error { return w.PartitionDisk(context.Background(), 9) },
		"SetDiskState":  func() error { return w.SetDiskState(context.Background(), 9, true) },
		"GetDiskState":  func() error { _, err := w.GetDiskState(context.Background(), 9); return err },
	} {
		if err := call(); err == nil || !strings.HasSuffix(err.Error(), ": the host has no disk 9") {
			t.Errorf("%s: got %v, want it to name disk 9", name, err)
		}
	}
	if c := p.Calls(); len(c) != 0 {
		t.Fatalf("calls %v", methods(p))
	}
}

func TestDiskState(t *testing.T) {
	w, p, s := newWMI(t)
	d := s.AddDisk(5, gib, 2)
	ctx := context.Background()
	if err := w.SetDiskState(ctx, 5, true); err != nil || len(p.Calls()) != 0 {
		t.Fatalf("online disk brought online: %v, calls %v", err, methods(p))
	}
	if err := w.SetDiskState(ctx, 5, false); err != nil || s.Prop(d, "IsOffline") != true {
		t.Fatalf("offline: %v, IsOffline %v", err, s.Prop(d, "IsOffline"))
	}
	if online, err := w.GetDiskState(ctx, 5); err != nil || online {
		t.Fatalf("GetDiskState %v %v, want offline", online, err)
	}
	if err := w.SetDiskState(ctx, 5, true); err != nil || s.Prop(d, "IsOffline") != false {
		t.Fatalf("online: %v", err)
	}
	if online, err := w.GetDiskState(ctx, 5); err != nil || !online {
		t.Fatalf("GetDiskState %v %v, want online", online, err)
	}
	if got, want := methods(p), []string{"MSFT_Disk.Offline", "MSFT_Disk.Online"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("calls %q, want %q", got, want)
	}
	// The system disk is not taken offline: the provider's answer reads.
	s.Set(d, "IsSystem", true)
	err := w.SetDiskState(ctx, 5, false)
	if want := "bringing disk 5 offline: MSFT_Disk.Offline returned 41009 (Operation not supported on a critical disk): the disk holds the system or boot volume"; err == nil || err.Error() != want {
		t.Fatalf("got %v, want %q", err, want)
	}
}

func TestRescan(t *testing.T) {
	w, p, s := newWMI(t)
	if err := w.Rescan(context.Background()); err != nil {
		t.Fatal(err)
	}
	if c := p.Calls(); len(c) != 1 || c[0].Path != "MSFT_StorageSetting" || c[0].Method != "MSFT_StorageSetting.UpdateHostStorageCache" {
		t.Fatalf("calls %+v", c)
	}
	s.Fail("MSFT_StorageSetting.UpdateHostStorageCache", 40001, "")
	if err := w.Rescan(context.Background()); err == nil || err.Error() != "rescanning the host's disks: MSFT_StorageSetting.UpdateHostStorageCache returned 40001 (Access denied)" {
		t.Fatalf("got %v", err)
	}
}

// Every documented failure code of every method reaches the caller as the
// operation, the method, the code, its meaning and the provider's status.
func TestFailureCodesReadAsTheirMeaning(t *testing.T) {
	type step struct {
		method, prefix string
		codes          map[uint32]string
		run            func(WMI) error
		setup          func(*wmitest.Storage)
	}
	partition := func(w WMI) error { return w.PartitionDisk(context.Background(), 3) }
	steps := []step{
		{"MSFT_Disk.Initialize", "initializing disk 3 as GPT: ", initializeCodes, partition, func(s *wmitest.Storage) { s.AddDisk(3, gib, 0) }},
		{"MSFT_Disk.CreatePartition", "creating a partition on disk 3: ", createPartitionCodes, partition, func(s *wmitest.Storage) { s.AddDisk(3, gib, 2) }},
		{"MSFT_Disk.Refresh", "refreshing disk 3 after creating its partition: ", refreshCodes, partition, func(s *wmitest.Storage) { s.AddDisk(3, gib, 2) }},
		{"MSFT_Partition.Online", "bringing the new partition of disk 3 online: ", partitionOnlineCodes, partition, func(s *wmitest.Storage) { s.AddDisk(3, gib, 2) }},
		{"MSFT_Disk.Online", "bringing disk 3 online: ", onlineCodes, func(w WMI) error { return w.SetDiskState(context.Background(), 3, true) },
			func(s *wmitest.Storage) { s.Set(s.AddDisk(3, gib, 2), "IsOffline", true) }},
		{"MSFT_Disk.Offline", "bringing disk 3 offline: ", offlineCodes, func(w WMI) error { return w.SetDiskState(context.Background(), 3, false) },
			func(s *wmitest.Storage) { s.AddDisk(3, gib, 2) }},
	}
	for _, st := range steps {
		codes := map[uint32]string{}
		for c, text := range wmi.CommonReturnCodes {
			codes[c] = text
		}
		for c, text := range st.codes {
			codes[c] = text
		}
		for code, text := range codes {
			if st.method == "MSFT_Disk.Initialize" && code == 41001 || st.method == "MSFT_Disk.CreatePartition" && code == 42002 {
				continue // success for these operations, above
			}
			w, _, s := newWMI(t)
			st.setup(s)
			s.Fail(st.method, code, "the provider's words")
			err := st.run(w)
			want := fmt.Sprintf("%s%s returned %d (%s): the provider's words", st.prefix, st.method, code, text)
			if err == nil || err.Error() != want {
				t.Errorf("%s %d: got %v, want %q", st.method, code, err, want)
			}
			var me *wmi.MethodError
			if !errors.As(err, &me) || me.Code != code {
				t.Errorf("%s %d: %v is not its *wmi.MethodError", st.method, code, err)
			}
		}
	}
	// Spot checks of the words themselves.
	if got := createPartitionCodes[41003]; got != "The disk is offline" {
		t.Errorf("41003 reads %q", got)
	}
	if got := initializeCodes[41014]; got != "The disk is not large enough to support a GPT partition style" {
		t.Errorf("41014 reads %q", got)
	}
}

// A method the provider holds past the deadline answers at the deadline:
// ctx's error without limits, a *limits.DeadlineError under them.
func TestHeldMethodAnswersAtTheDeadline(t *testing.T) {
	for name, lim := range map[string]limits.Limiter{
		"no limits":   nil,
		"with limits": limits.Bound("disk", limits.Limits{Timeout: 50 * time.Millisecond, Setting: "--host-call-timeout-disk"}),
	} {
		t.Run(name, func(t *testing.T) {
			w, p, s := newWMI(t)
			w.Limits = lim
			s.Set(s.AddDisk(3, gib, 2), "IsOffline", true)
			release := p.Hold("MSFT_Disk", "Online")
			defer release()
			timeout := 50 * time.Millisecond
			if lim != nil {
				timeout = time.Minute // the limits' deadline comes first
			}
			ctx, cancel := context.WithTimeout(context.Background(), timeout)
			defer cancel()
			start := time.Now()
			err := w.SetDiskState(ctx, 3, true)
			if !errors.Is(err, context.DeadlineExceeded) {
				t.Fatalf("got %v, want the deadline", err)
			}
			if d := time.Since(start); d > 2*time.Second {
				t.Fatalf("answered after %v", d)
			}
			var de *limits.DeadlineError
			if lim != nil && (!errors.As(err, &de) || de.Op != OpOnline) {
				t.Errorf("got %v, want a *limits.DeadlineError of %s", err, OpOnline)
			}
		})
	}
}

func TestNoConnFailsClosed(t *testing.T) {
	var w WMI
	ctx := context.Background()
	_, stateErr := w.GetDiskState(ctx, 1)
	for name, err := range map[string]error{
		"PartitionDisk": w.PartitionDisk(ctx, 1),
		"Rescan":        w.Rescan(ctx),
		"SetDiskState":  w.SetDiskState(ctx, 1, true),
		"GetDiskState":  stateErr,
	} {
		if err == nil || !strings.Contains(err.Error(), "no WMI connection") {
			t.Errorf("%s: got %v, want it to fail for want of a connection", name, err)
		}
	}
}
