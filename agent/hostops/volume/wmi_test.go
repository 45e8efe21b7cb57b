package volume

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/pipeguard/pipeguard/agent/hostops/limits"
	"github.com/pipeguard/pipeguard/agent/hostops/wmi"
	"github.com/pipeguard/pipeguard/internal/testing/hostile"
	"github.com/pipeguard/pipeguard/internal/testing/wmitest"
)

const gib = 1 << 30

type wmiFixture struct {
	w          WMI
	p          *wmitest.Provider
	s          *wmitest.Storage
	disk, part *wmitest.Instance
	vol        *wmitest.Instance
}

// newWMIFixture is disk 1 of 10 GiB holding a 4 GiB partition and its raw
// volume vol.
func newWMIFixture(t *testing.T) wmiFixture {
	t.Helper()
	p := wmitest.New()
	s := wmitest.AddStorage(p)
	f := wmiFixture{w: WMI{Conn: p}, p: p, s: s, disk: s.AddDisk(1, 10*gib, 2)}
	f.part = s.AddPartition(f.disk, 4*gib, wmitest.GPTBasicData)
	f.vol = s.AddVolume(f.part, vol, "")
	return f
}

// wmiCalls lists the methods called, in order, with their in-parameters
// and the types they were sent as.
func wmiCalls(p *wmitest.Provider) []string {
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

func TestWMIFormatVolume(t *testing.T) {
	f := newWMIFixture(t)
	if err := f.w.FormatVolume(context.Background(), vol); err != nil {
		t.Fatal(err)
	}
	want := []string{"MSFT_Volume.Format FileSystem=string(NTFS) FileSystemLabel=string() Force=bool(false) Full=bool(false)"}
	if got := wmiCalls(f.p); !reflect.DeepEqual(got, want) {
		t.Fatalf("calls %q, want %q", got, want)
	}
	if got := f.s.Prop(f.vol, "FileSystem"); got != "NTFS" {
		t.Fatalf("FileSystem %v, want NTFS", got)
	}
	if q, want := f.p.Queries(), []string{`SELECT * FROM MSFT_Volume WHERE UniqueId = '\\\\?\\Volume{452e318a-5cde-421e-9831-b9853c521012}\\'`}; !reflect.DeepEqual(q, want) {
		t.Fatalf("queries %q, want %q", q, want)
	}
}

func TestWMIResizeVolume(t *testing.T) {
	for name, tc := range map[string]struct {
		size  int64
		calls []string
		want  uint64
	}{
		"to the maximum": {size: 0, want: 10 * gib, calls: []string{
			"MSFT_Partition.GetSupportedSize", "MSFT_Partition.Resize Size=uint64(10737418240)", "MSFT_Disk.Refresh"}},
		"to a size": {size: 6 * gib, want: 6 * gib, calls: []string{"MSFT_Partition.Resize Size=uint64(6442450944)", "MSFT_Disk.Refresh"}},
		"by 100 MiB": {size: 4*gib + 100<<20, want: 4*gib + 100<<20, calls: []string{
			"MSFT_Partition.Resize Size=uint64(4399824896)", "MSFT_Disk.Refresh"}},
		"by less than 100 MiB": {size: 4*gib + 100<<20 - 1, want: 4 * gib},
		"the same size":        {size: 4 * gib, want: 4 * gib},
		"smaller":              {size: 1 * gib, want: 4 * gib},
		"negative":             {size: -1, want: 4 * gib},
	} {
		t.Run(name, func(t *testing.T) {
			f := newWMIFixture(t)
			if err := f.w.ResizeVolume(context.Background(), vol, tc.size); err != nil {
				t.Fatal(err)
			}
			if got := wmiCalls(f.p); !reflect.DeepEqual(got, tc.calls) {
				t.Fatalf("calls %q, want %q", got, tc.calls)
			}
			if got := f.s.Prop(f.part, "Size"); got != tc.want {
				t.Fatalf("partition size %v, want %d", got, tc.want)
			}
			for _, c := range f.p.Calls() {
				if c.Method == "MSFT_Disk.Refresh" && c.Path != wmitest.RelPath("MSFT_Disk", "ObjectId", f.s.Prop(f.disk, "ObjectId").(string)) {
					t.Errorf("refreshed %s, want the volume's disk", c.Path)
				}
			}
		})
	}
}

// The maximum within 100 MiB of the partition's size is no growth.
func TestWMIResizeVolumeToANearMaximum(t *testing.T) {
	f := newWMIFixture(t)
	f.s.Set(f.disk, "Size", uint64(4*gib+99<<20))
	if err := f.w.ResizeVolume(context.Background(), vol, 0); err != nil {
		t.Fatal(err)
	}
	if got := wmiCalls(f.p); !reflect.DeepEqual(got, []string{"MSFT_Partition.GetSupportedSize"}) {
		t.Fatalf("calls %q, want only GetSupportedSize", got)
	}
}

func TestWMIMissingVolume(t *testing.T) {
	f := newWMIFixture(t)
	other := `\\?\Volume{00000000-0000-0000-0000-000000000009}\`
	if err := f.w.FormatVolume(context.Background(), other); err == nil || err.Error() != `formatting volume `+other+`: the host has no such volume` {
		t.Errorf("format: got %v", err)
	}
	if err := f.w.ResizeVolume(context.Background(), other, 0); err == nil || !strings.HasSuffix(err.Error(), ": the host has no such volume") {
		t.Errorf("resize: got %v", err)
	}
	if c := f.p.Calls(); len(c) != 0 {
		t.Fatalf("calls %q", wmiCalls(f.p))
	}
	// A volume the host shows on no partition.
	lone := `\\?\Volume{00000000-0000-0000-0000-00000000000a}\`
	p2 := wmitest.New()
	s2 := wmitest.AddStorage(p2)
	d2 := s2.AddDisk(1, gib, 2)
	s2.AddVolume(s2.AddPartition(d2, gib, wmitest.GPTBasicData), "unused", "")
	p2.Add(wmi.NamespaceStorage, "MSFT_Volume", map[string]any{"ObjectId": "lone", "UniqueId": lone, "Size": uint64(gib)})
	if err := (WMI{Conn: p2}).ResizeVolume(context.Background(), lone, 0); err == nil || !strings.HasSuffix(err.Error(), ": the host reports no partition of it") {
		t.Errorf("resize of a volume on no partition: got %v", err)
	}
}

// Every documented failure code reaches the caller as the operation, the
// method, the code, its meaning and the provider's status.
func TestWMIFailureCodesReadAsTheirMeaning(t *testing.T) {
	for _, st := range []struct {
		method, prefix string
		codes          map[uint32]string
		run            func(WMI) error
	}{
		{"MSFT_Volume.Format", `formatting volume ` + vol + `: `, formatCodes,
			func(w WMI) error { return w.FormatVolume(context.Background(), vol) }},
		{"MSFT_Partition.GetSupportedSize", `resizing volume ` + vol + `: `, resizeCodes,
			func(w WMI) error { return w.ResizeVolume(context.Background(), vol, 0) }},
		{"MSFT_Partition.Resize", `resizing volume ` + vol + `: `, resizeCodes,
			func(w WMI) error { return w.ResizeVolume(context.Background(), vol, 0) }},
		{"MSFT_Disk.Refresh", `resizing volume ` + vol + `: refreshing its disk 1: `, refreshCodes,
			func(w WMI) error { return w.ResizeVolume(context.Background(), vol, 0) }},
	} {
		codes := map[uint32]string{}
		for c, text := range wmi.CommonReturnCodes {
			codes[c] = text
		}
		for c, text := range st.codes {
			codes[c] = text
		}
		for code, text := range codes {
			f := newWMIFixture(t)
			f.s.Fail(st.method, code, "the provider's words")
			err := st.run(f.w)
			want := fmt.Sprintf("%s%s returned %d (%s): the provider's words", st.prefix, st.method, code, text)
			if err == nil || err.Error() != want {
				t.Errorf("%s %d: got %v, want %q", st.method, code, err, want)
			}
		}
	}
	// The provider's own refusals, with the words a user reads.
	f := newWMIFixture(t)
	f.s.Set(f.part, "IsSystem", true)
	err := f.w.FormatVolume(context.Background(), vol)
	if want := "MSFT_Volume.Format returned 42010 (The operation is not allowed on a system or critical partition)"; err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("format of a system partition's volume: got %v, want %q", err, want)
	}
	f = newWMIFixture(t)
	f.s.Set(f.vol, "FileSystem", "FAT32")
	err = f.w.ResizeVolume(context.Background(), vol, 8*gib)
	if want := "MSFT_Partition.Resize returned 42009 (Cannot resize a partition containing an unknown file system)"; err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("resize of FAT32: got %v, want %q", err, want)
	}
}

// Hostile volume ids are refused by wmi.Quote or sent only quoted: the
// strict parser accepts every query, and only the volume of that id is
// formatted.
func TestWMIHostileVolumeIDs(t *testing.T) {
	p := wmitest.New()
	s := wmitest.AddStorage(p)
	d := s.AddDisk(1, 100*gib, 2)
	victim := s.AddVolume(s.AddPartition(d, gib, wmitest.GPTBasicData), vol, "")
	ids := append(hostile.Values(), "x\x00y", "x\ty", `' OR TRUE OR '`, `\'`)
	byID := map[string]*wmitest.Instance{}
	for _, id := range ids {
		byID[id] = s.AddVolume(s.AddPartition(d, gib, wmitest.GPTBasicData), id, "")
	}
	w := WMI{Conn: p}
	refused := 0
	for _, id := range ids {
		before := len(p.Calls())
		err := w.FormatVolume(context.Background(), id)
		if err != nil {
			refused++
			if !strings.Contains(err.Error(), "the volume id cannot be looked up: WQL value") {
				t.Errorf("%q: refused with %q, want it to say the id cannot be looked up", id, err)
			}
			if len(p.Calls()) != before {
				t.Errorf("%q: refused, yet a method was called", id)
			}
			continue
		}
		calls := p.Calls()[before:]
		wantPath := wmitest.RelPath("MSFT_Volume", "ObjectId", s.Prop(byID[id], "ObjectId").(string))
		if len(calls) != 1 || calls[0].Path != wantPath {
			t.Errorf("%q: calls %+v, want one on %s", id, calls, wantPath)
		}
	}
	if refused == 0 || refused == len(ids) {
		t.Fatalf("%d of %d ids refused, want the ones with control characters only", refused, len(ids))
	}
	if fs := s.Prop(victim, "FileSystem"); fs != "" {
		t.Fatalf("a hostile id formatted volume %s", vol)
	}
	// Each query made matches its own volume only.
	for _, q := range p.Queries() {
		if !strings.HasPrefix(q, "SELECT * FROM MSFT_Volume WHERE UniqueId = '") {
			t.Errorf("query %q", q)
		}
		got, err := p.Query(context.Background(), wmi.NamespaceStorage, q)
		if err != nil || len(got) != 1 {
			t.Errorf("query %q matched %d volumes (%v), want one", q, len(got), err)
		}
	}
}

// A Format the provider holds past the deadline answers at the deadline:
// ctx's error without limits, a *limits.DeadlineError under them.
func TestWMIHeldFormatAnswersAtTheDeadline(t *testing.T) {
	for name, lim := range map[string]limits.Limiter{
		"no limits":   nil,
		"with limits": limits.Bound("volume", limits.Limits{Timeout: 50 * time.Millisecond}, limits.Class{Ops: FormatOps(), Limits: limits.Limits{Timeout: 50 * time.Millisecond, Concurrency: 1}}),
	} {
		t.Run(name, func(t *testing.T) {
			f := newWMIFixture(t)
			f.w.Limits = lim
			release := f.p.Hold("MSFT_Volume", "Format")
			defer release()
			timeout := 50 * time.Millisecond
			if lim != nil {
				timeout = time.Minute // the limits' deadline comes first
			}
			ctx, cancel := context.WithTimeout(context.Background(), timeout)
			defer cancel()
			start := time.Now()
			err := f.w.FormatVolume(ctx, vol)
			if !errors.Is(err, context.DeadlineExceeded) {
				t.Fatalf("got %v, want the deadline", err)
			}
			if d := time.Since(start); d > 2*time.Second {
				t.Fatalf("answered after %v", d)
			}
			var de *limits.DeadlineError
			if lim != nil && (!errors.As(err, &de) || de.Op != OpFormat) {
				t.Errorf("got %v, want a *limits.DeadlineError of %s", err, OpFormat)
			}
		})
	}
}

func TestWMINoConnFailsClosed(t *testing.T) {
	var w WMI
	for name, err := range map[string]error{
		"FormatVolume": w.FormatVolume(context.Background(), vol),
		"ResizeVolume": w.ResizeVolume(context.Background(), vol, 0),
	} {
		if err == nil || !strings.Contains(err.Error(), "no WMI connection") {
			t.Errorf("%s: got %v, want it to fail for want of a connection", name, err)
		}
	}
}

// TestFormatOpsHoldTheWMIOperations: the format cap applies to exactly the
// names the format and the resize run under.
func TestFormatOpsHoldTheWMIOperations(t *testing.T) {
	if want := []string{OpFormat, OpResize}; !slices.Equal(FormatOps(), want) {
		t.Errorf("FormatOps() = %q, want %q", FormatOps(), want)
	}
}
