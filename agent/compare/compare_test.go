package compare_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"regexp"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/pipeguard/pipeguard/agent/compare"
	"github.com/pipeguard/pipeguard/internal/testing/comparetest"
)

const target = `C:\var\lib\kubelet\plugins\kubernetes.io\csi\pd.csi.storage.gke.io\h\globalmount`

func options() compare.Options {
	return compare.Options{Timeout: 5 * time.Second, KubeletPath: `C:\var\lib\kubelet`, TargetPaths: []string{target}}
}

func run(t *testing.T, csi, pg *comparetest.Side, o compare.Options) (compare.Report, string) {
	t.Helper()
	r := compare.Compare(context.Background(), csi.Conns(), pg.Conns(), o)
	var b bytes.Buffer
	if err := compare.WriteTable(&b, r); err != nil {
		t.Fatal(err)
	}
	return r, b.String()
}

// differences returns the differences of the rows of rpc.
func differences(r compare.Report, rpc string) []string {
	var out []string
	for _, row := range r.Rows {
		if row.RPC == rpc {
			out = append(out, row.Differences...)
		}
	}
	return out
}

func TestIdentical(t *testing.T) {
	csi, pg := comparetest.Node(), comparetest.Node()
	// The same volumes listed in another order are the same answer.
	d := pg.Disks[0]
	d.Volumes = []string{d.Volumes[1], d.Volumes[0]}
	pg.Disks[0] = d
	r, out := run(t, csi, pg, options())
	if !r.Identical || r.Differ != 0 {
		t.Fatalf("not identical:\n%s", out)
	}
	// 2 lists, 2 disks' stats and volumes, 3 volumes' formatted and
	// stats, 1 target path, PathExists, BIOS serial, 3 services.
	if r.Calls != 2+2*2+3*2+1+1+1+3 {
		t.Errorf("%d calls:\n%s", r.Calls, out)
	}
	for _, want := range []string{"pipeguard answers as CSI Proxy does", "smb: not compared", "iscsi: not compared"} {
		if !strings.Contains(out, want) {
			t.Errorf("table lacks %q:\n%s", want, out)
		}
	}
}

func TestEachDifferenceIsNamed(t *testing.T) {
	for name, tc := range map[string]struct {
		change func(csi *comparetest.Side)
		rpc    string
		want   string
	}{
		"missing disk": {func(s *comparetest.Side) { delete(s.Disks, 1) }, "disk.ListDiskLocations", "disk 1: only pipeguard answers it (adapter 1, bus 0, target 0, LUN 3)"},
		"LUN": {func(s *comparetest.Side) { d := s.Disks[1]; d.LUN = "4"; s.Disks[1] = d },
			"disk.ListDiskLocations", "disk 1: CSI Proxy adapter 1, bus 0, target 0, LUN 4, pipeguard adapter 1, bus 0, target 0, LUN 3"},
		"page83": {func(s *comparetest.Side) { d := s.Disks[1]; d.Page83 = "Google pvc-2"; s.Disks[1] = d }, "disk.ListDiskIDs", "disk 1 page83: CSI Proxy Google pvc-2, pipeguard Google pvc-1"},
		"serial": {func(s *comparetest.Side) { d := s.Disks[0]; d.Serial = "X"; s.Disks[0] = d }, "disk.ListDiskIDs", "disk 0 serialNumber: CSI Proxy X, pipeguard OSDISK"},
		"size":   {func(s *comparetest.Side) { d := s.Disks[0]; d.Size++; s.Disks[0] = d }, "disk.GetDiskStats", "totalBytes: CSI Proxy 137438953473, pipeguard 137438953472"},
		"volume list": {func(s *comparetest.Side) {
			d := s.Disks[1]
			d.Volumes = append(d.Volumes, `\\?\Volume{b2}\`)
			s.Disks[1] = d
		}, "volume.ListVolumesOnDisk", `\\?\Volume{b2}\: only CSI Proxy answers it`},
		"formatted": {func(s *comparetest.Side) {
			s.Volumes[`\\?\Volume{b1}\`] = comparetest.Volume{Formatted: true, Total: 10 << 30}
		},
			"volume.IsVolumeFormatted", "formatted: CSI Proxy true, pipeguard false"},
		"used bytes beyond tolerance": {func(s *comparetest.Side) {
			s.Volumes[`\\?\Volume{a2}\`] = comparetest.Volume{Formatted: true, Total: 127 << 30, Used: 42 << 30}
		}, "volume.GetVolumeStats", "usedBytes: CSI Proxy 45097156608, pipeguard 42949672960"},
		"target path": {func(s *comparetest.Side) { s.Targets[target] = `\\?\Volume{a1}\` }, "volume.GetVolumeIDFromTargetPath", `volumeId: CSI Proxy \\?\Volume{a1}\, pipeguard \\?\Volume{b1}\`},
		"kubelet dir": {func(s *comparetest.Side) { s.Paths = nil }, "filesystem.PathExists", "exists: CSI Proxy false, pipeguard true"},
		"BIOS serial": {func(s *comparetest.Side) { s.Serial = "other" }, "system.GetBIOSSerialNumber", "serialNumber: CSI Proxy other, pipeguard GoogleCloud-1234"},
		"service": {func(s *comparetest.Side) {
			x := s.Services["MSiSCSI"]
			x.Status = 4
			s.Services["MSiSCSI"] = x
		}, "system.GetService", "status: CSI Proxy RUNNING, pipeguard STOPPED"},
		"empty BIOS serial": {func(s *comparetest.Side) { s.Serial = "" }, "system.GetBIOSSerialNumber", `serialNumber: CSI Proxy "", pipeguard GoogleCloud-1234`},
		"error on one side": {func(s *comparetest.Side) {
			s.Errors = map[string]error{"GetBIOSSerialNumber": errors.New("WMI is broken")}
		},
			"system.GetBIOSSerialNumber", "fails on CSI Proxy only: Unknown: WMI is broken"},
	} {
		t.Run(name, func(t *testing.T) {
			csi, pg := comparetest.Node(), comparetest.Node()
			tc.change(csi)
			r, out := run(t, csi, pg, options())
			if r.Identical {
				t.Fatalf("identical:\n%s", out)
			}
			got := differences(r, tc.rpc)
			if !contains(got, tc.want) {
				t.Errorf("%s differences %q, want %q\n%s", tc.rpc, got, tc.want, out)
			}
			if !regexp.MustCompile(`(?m)^DIFFERENT +`+regexp.QuoteMeta(tc.rpc)+` `).MatchString(out) || !strings.Contains(out, "  - "+tc.want) {
				t.Errorf("table does not show the difference:\n%s", out)
			}
		})
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// TestUsedBytesTolerance: used bytes that moved by less than the
// tolerance between the two reads are the same; total bytes never are.
func TestUsedBytesTolerance(t *testing.T) {
	csi, pg := comparetest.Node(), comparetest.Node()
	// a2 is 127 GiB: 1% is 1.27 GiB. a1 is 100 MiB: the floor, 64 MiB.
	csi.Volumes[`\\?\Volume{a2}\`] = comparetest.Volume{Formatted: true, Total: 127 << 30, Used: 41 << 30}
	csi.Volumes[`\\?\Volume{a1}\`] = comparetest.Volume{Formatted: true, Total: 100 << 20, Used: 90 << 20}
	if r, out := run(t, csi, pg, options()); !r.Identical {
		t.Fatalf("moves within tolerance differ:\n%s", out)
	}
	csi.Volumes[`\\?\Volume{a1}\`] = comparetest.Volume{Formatted: true, Total: 100<<20 + 1, Used: 30 << 20}
	r, out := run(t, csi, pg, options())
	if r.Identical || !contains(differences(r, "volume.GetVolumeStats"), "totalBytes: CSI Proxy 104857601, pipeguard 104857600") {
		t.Fatalf("a different total is not named:\n%s", out)
	}
}

// TestBothFailing: a call both sides fail is the same outcome, whatever
// the error texts.
func TestBothFailing(t *testing.T) {
	csi, pg := comparetest.Node(), comparetest.Node()
	csi.Errors = map[string]error{"GetService": errors.New("OpenService: The specified service does not exist")}
	pg.Errors = map[string]error{"GetService": status.Error(codes.NotFound, "no service MSiSCSI")}
	if r, out := run(t, csi, pg, options()); !r.Identical {
		t.Fatalf("differ:\n%s", out)
	}
}

// TestHungCSIProxy: a call that never answers ends at its deadline, is
// named, and the rest are still compared.
func TestHungCSIProxy(t *testing.T) {
	csi, pg := comparetest.Node(), comparetest.Node()
	csi.Hang = map[string]bool{"ListDiskIDs": true, "GetService": true}
	o := options()
	o.Timeout = 100 * time.Millisecond
	start := time.Now()
	r, out := run(t, csi, pg, o)
	if took := time.Since(start); took > 5*time.Second {
		t.Errorf("took %s", took)
	}
	if got := differences(r, "disk.ListDiskIDs"); !contains(got, "fails on CSI Proxy only: no answer within 100ms (Options.Timeout)") {
		t.Errorf("ListDiskIDs differences %q\n%s", got, out)
	}
	if got := differences(r, "system.GetService"); len(got) != 3 {
		t.Errorf("GetService differences %q, want one per service", got)
	}
	if r.Calls != 18 {
		t.Errorf("%d calls, want every call still made:\n%s", r.Calls, out)
	}
}

// TestHungCallNamesTheFlag: with the command's Namer, the call that did
// not answer names the flag that sets its deadline.
func TestHungCallNamesTheFlag(t *testing.T) {
	csi, pg := comparetest.Node(), comparetest.Node()
	csi.Hang = map[string]bool{"ListDiskIDs": true}
	o := options()
	o.Timeout = 100 * time.Millisecond
	o.Namer = func(key string) (string, bool) { return "--timeout", key == compare.OptionTimeout }
	r, out := run(t, csi, pg, o)
	if got := differences(r, "disk.ListDiskIDs"); !contains(got, "fails on CSI Proxy only: no answer within 100ms (--timeout)") {
		t.Errorf("ListDiskIDs differences %q\n%s", got, out)
	}
}

// TestUnavailable: CSI Proxy answering Unavailable is reported as
// unreachable.
func TestUnavailable(t *testing.T) {
	csi, pg := comparetest.Node(), comparetest.Node()
	csi.Errors = map[string]error{"PathExists": status.Error(codes.Unavailable, "connection refused")}
	r, _ := run(t, csi, pg, options())
	if len(r.Unreachable) != 1 || r.Unreachable[0] != `filesystem.PathExists C:\var\lib\kubelet` {
		t.Errorf("unreachable %q", r.Unreachable)
	}
	if r.Identical {
		t.Error("identical")
	}
}

// TestHugeAnswers: a CSI Proxy listing more than the bounds is reported
// as failing those calls, and is not asked about each entry.
func TestHugeAnswers(t *testing.T) {
	csi, pg := comparetest.Node(), comparetest.Node()
	for n := uint32(2); n < 5000; n++ {
		csi.Disks[n] = comparetest.Disk{LUN: "1"}
	}
	d := csi.Disks[0]
	for i := 0; i < 3000; i++ {
		d.Volumes = append(d.Volumes, `\\?\Volume{x`+strings.Repeat("y", i%7)+string(rune('a'+i%26))+`}\`)
	}
	csi.Disks[0] = d
	r, out := run(t, csi, pg, options())
	want := "fails on CSI Proxy only: answered 5000 entries; compare reads at most 1024"
	for _, rpc := range []string{"disk.ListDiskLocations", "disk.ListDiskIDs"} {
		if !contains(differences(r, rpc), want) {
			t.Errorf("%s: %q, want %q", rpc, differences(r, rpc), want)
		}
	}
	stats := 0
	for _, c := range csi.Calls() {
		if c == "GetDiskStats" {
			stats++
		}
	}
	if stats != 2 {
		t.Errorf("GetDiskStats called %d times, want only for pipeguard's 2 disks", stats)
	}
	if !contains(differences(r, "volume.ListVolumesOnDisk"), "fails on CSI Proxy only: answered 3002 entries; compare reads at most 1024") {
		t.Errorf("ListVolumesOnDisk: %q\n%s", differences(r, "volume.ListVolumesOnDisk"), out)
	}
}

// TestGarbage: control characters are quoted and long values cut, in the
// table and in JSON.
func TestGarbage(t *testing.T) {
	csi, pg := comparetest.Node(), comparetest.Node()
	csi.Serial = "\x1b[2J\x1b[31mEVIL\n" + strings.Repeat("A", 10000)
	r, out := run(t, csi, pg, options())
	if strings.Contains(out, "\x1b") {
		t.Errorf("the table holds an escape sequence")
	}
	var b bytes.Buffer
	if err := compare.WriteJSON(&b, r); err != nil {
		t.Fatal(err)
	}
	var back compare.Report
	if err := json.Unmarshal(b.Bytes(), &back); err != nil {
		t.Fatal(err)
	}
	got := differences(back, "system.GetBIOSSerialNumber")
	if len(got) != 1 || !strings.HasPrefix(got[0], `serialNumber: CSI Proxy "\x1b[2J\x1b[31mEVIL\n`) || !strings.Contains(got[0], "…(10014 bytes)") || len(got[0]) > 1000 {
		t.Errorf("difference %q", got)
	}
}

// TestStoppedAnswering: a CSI Proxy that answers nothing costs MaxTimeouts
// deadlines, then is asked nothing more; every call is still reported,
// and the report says CSI Proxy could not be reached.
func TestStoppedAnswering(t *testing.T) {
	csi, pg := comparetest.Node(), comparetest.Node()
	csi.Hang = map[string]bool{}
	for _, ms := range compare.Allowed {
		for _, m := range ms {
			csi.Hang[m] = true
		}
	}
	o := options()
	o.Timeout = 100 * time.Millisecond
	start := time.Now()
	r, out := run(t, csi, pg, o)
	if took := time.Since(start); took > 2*time.Second {
		t.Errorf("took %s", took)
	}
	if n := len(csi.Calls()); n != compare.MaxTimeouts {
		t.Errorf("CSI Proxy asked %d times, want %d", n, compare.MaxTimeouts)
	}
	if r.Identical || len(r.Unreachable) == 0 || !strings.Contains(out, "CSI Proxy stopped answering: 3 calls in a row had no answer within 100ms; it was asked nothing more") {
		t.Errorf("unreachable %q:\n%s", r.Unreachable, out)
	}
	if !contains(differences(r, "filesystem.PathExists"), "fails on CSI Proxy only: not asked: CSI Proxy left 3 calls in a row unanswered") {
		t.Errorf("%s", out)
	}
}
