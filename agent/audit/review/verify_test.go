package review

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"

	"github.com/pipeguard/pipeguard/agent/audit"
)

func TestChainAcrossRotationAndRestart(t *testing.T) {
	path := filepath.Join(t.TempDir(), "audit.log")
	clock := time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)
	now := func() time.Time { clock = clock.Add(time.Millisecond); return clock }
	l := openLog(t, audit.Options{Path: path, MaxSize: 4096, CheckpointEvery: 7, Now: now})
	write(t, l, 0, 40)
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	l = openLog(t, audit.Options{Path: path, MaxSize: 4096, CheckpointEvery: 7, Now: now})
	write(t, l, 40, 10)
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	rep := verify(t, path)
	if !rep.OK() || len(rep.Files) < 3 || rep.First != 1 || rep.Last != uint64(rep.Records) {
		t.Fatalf("report: ok=%v files=%d records=%d first=%d last=%d problems=%v", rep.OK(), len(rep.Files), rep.Records, rep.First, rep.Last, rep.Problems)
	}
	reqs, err := Requests(Source{Paths: mustFiles(t, path)}, Filter{})
	if err != nil || len(reqs) != 50 {
		t.Fatalf("requests: %d, %v", len(reqs), err)
	}
	for i, r := range reqs {
		if r.Event.AuditID != fmt.Sprintf("id-%d", i) {
			t.Fatalf("request %d is %s", i, r.Event.AuditID)
		}
	}
}

func TestTornTailIsRotatedAndReported(t *testing.T) {
	path := filepath.Join(t.TempDir(), "audit.log")
	var handle *os.File
	l := openLog(t, audit.Options{Path: path, OpenFile: func(p string) (audit.File, error) {
		f, err := os.OpenFile(p, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
		handle = f
		return f, err
	}})
	write(t, l, 0, 3)
	// The agent crashes: its handle on the file goes with its process
	// (on Windows, an open handle would keep the file from being renamed).
	_ = handle.Close()
	// A crash mid-write leaves part of a line; the agent never answered it.
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString(`{"kind":"Event","apiVersion":"audit.k8s.io/v1","level":"Meta`)
	f.Close()

	rep := verify(t, path)
	if !rep.OK() || len(rep.Notices) != 2 || !strings.Contains(rep.Notices[0].String(), "audit.log:5: torn final line (60 bytes without a newline)") || rep.Notices[1].Msg != NoAnchorNotice {
		t.Fatalf("before restart: ok=%v problems=%v notices=%v", rep.OK(), rep.Problems, rep.Notices)
	}
	l = openLog(t, audit.Options{Path: path})
	write(t, l, 3, 2)
	l.Close()
	rep = verify(t, path)
	if !rep.OK() || len(rep.Files) != 2 || len(rep.Notices) != 2 || !strings.Contains(rep.Notices[0].Msg, "torn final line (60 bytes without a newline): a write cut short when the agent stopped, recorded by the agent when it restarted") {
		t.Fatalf("after restart: ok=%v files=%v problems=%v notices=%v", rep.OK(), rep.Files, rep.Problems, rep.Notices)
	}
	var start audit.Event
	_ = audit.ScanFile(path, func(r audit.Record) error { start = r.Event; return errStop })
	if start.Annotation(audit.AnnotationTornBytes) != "60" || start.Annotation(audit.AnnotationCheckpoint) != "start" {
		t.Fatalf("start checkpoint annotations: %v", start.Annotations)
	}
}

func TestPruneKeepsChainVerifiable(t *testing.T) {
	path := filepath.Join(t.TempDir(), "audit.log")
	clock := time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)
	now := func() time.Time { clock = clock.Add(time.Second); return clock }
	l := openLog(t, audit.Options{Path: path, MaxSize: 2048, MaxBackups: 2, Now: now})
	write(t, l, 0, 60)
	l.Close()
	backups, _ := audit.Backups(path)
	if len(backups) != 2 {
		t.Fatalf("backups: %v", backups)
	}
	rep := verify(t, path)
	if !rep.OK() || rep.First == 1 || !strings.Contains(fmt.Sprint(rep.Notices), "their prune checkpoints match") {
		t.Fatalf("ok=%v first=%d problems=%v notices=%v", rep.OK(), rep.First, rep.Problems, rep.Notices)
	}
	// Deleting the oldest remaining file is not a prune: verify says so.
	os.Remove(backups[0])
	rep = verify(t, path)
	if rep.OK() || !strings.Contains(rep.Problems[0].Msg, "no prune checkpoint accounts for them") {
		t.Fatalf("after deleting the oldest file: %v", rep.Problems)
	}
}

// TestVerifyFindsTampering edits a verified log in the ways an intruder
// would and checks that verify names the first bad or missing record.
func TestVerifyFindsTampering(t *testing.T) {
	cases := map[string]struct {
		tamper func(t *testing.T, files []string)
		want   string
	}{
		"intact": {tamper: func(*testing.T, []string) {}},
		"edited record": {
			tamper: func(t *testing.T, files []string) {
				editLine(t, files[0], 3, func(s string) string { return strings.Replace(s, `"allow"`, `"deny"`, 1) })
			},
			want: ":4: record seq 4 does not follow record seq 3",
		},
		"deleted record": {
			tamper: func(t *testing.T, files []string) { editLine(t, files[0], 3, func(string) string { return "" }) },
			want:   ":3: record seq 4 follows record seq 2 (",
		},
		"reordered records": {
			tamper: func(t *testing.T, files []string) {
				lines := readLines(t, files[0])
				lines[2], lines[3] = lines[3], lines[2]
				writeLines(t, files[0], lines)
			},
			want: ":3: record seq 4 follows record seq 2",
		},
		"garbage line": {
			tamper: func(t *testing.T, files []string) { editLine(t, files[0], 2, func(string) string { return "hello" }) },
			want:   ":2: line is not a valid audit record: not a JSON audit record",
		},
		"deleted middle rotated file": {
			tamper: func(t *testing.T, files []string) { os.Remove(files[1]) },
			want:   "are missing between",
		},
		"seq edited to hide a gap": {
			tamper: func(t *testing.T, files []string) {
				editLine(t, files[0], 3, func(string) string { return "" })
				editLine(t, files[0], 3, func(s string) string {
					return strings.Replace(s, `"pipeguard.io/seq":"4"`, `"pipeguard.io/seq":"3"`, 1)
				})
			},
			want: "record seq 3 does not follow record seq 2",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "audit.log")
			clock := time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)
			l := openLog(t, audit.Options{Path: path, MaxSize: 3000, Now: func() time.Time { clock = clock.Add(time.Second); return clock }})
			write(t, l, 0, 30)
			l.Close()
			files := mustFiles(t, path)
			if len(files) < 3 {
				t.Fatalf("want at least 3 files, got %v", files)
			}
			tc.tamper(t, files)
			rep := verify(t, path)
			if tc.want == "" {
				if !rep.OK() {
					t.Fatalf("intact log: %v", rep.Problems)
				}
				return
			}
			if rep.OK() {
				t.Fatalf("tampering not found")
			}
			if got := rep.Problems[0].String(); !strings.Contains(got, tc.want) {
				t.Fatalf("first problem %q does not contain %q", got, tc.want)
			}
		})
	}
}

// TestStdoutLogVerifies writes the log to standard output, as
// --audit-log-path - does, and verifies the stream a collector would read.
func TestStdoutLogVerifies(t *testing.T) {
	out, err := os.Create(filepath.Join(t.TempDir(), "stdout"))
	if err != nil {
		t.Fatal(err)
	}
	defer out.Close()
	saved := os.Stdout
	os.Stdout = out
	defer func() { os.Stdout = saved }()

	l, err := audit.Open(audit.Options{Path: audit.StdoutPath, Log: logr.Discard()})
	if err != nil {
		t.Fatal(err)
	}
	write(t, l, 0, 20)
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	os.Stdout = saved
	if _, err := out.Seek(0, 0); err != nil {
		t.Fatal(err)
	}
	rep, err := Verify(Source{Reader: out, Name: "stdout"})
	if err != nil || !rep.OK() || rep.First != 1 || rep.Last != l.Seq() || rep.Last != 22 {
		t.Fatalf("verify of standard output: err=%v ok=%v first=%d last=%d problems=%v", err, rep.OK(), rep.First, rep.Last, rep.Problems)
	}
}

// TestVerifyLogRotatedBelowACheckpoint: a log whose MaxSize is smaller
// than the checkpoints of a rotation, with old files pruned, verifies
// intact: the rotation's checkpoints go into the new file whole.
func TestVerifyLogRotatedBelowACheckpoint(t *testing.T) {
	path := filepath.Join(t.TempDir(), "audit.log")
	l := openLog(t, audit.Options{Path: path, MaxSize: 200, MaxBackups: 2})
	write(t, l, 1, 12)
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	files, err := audit.Files(path)
	if err != nil {
		t.Fatal(err)
	}
	rep, err := Verify(Source{Paths: files})
	if err != nil {
		t.Fatal(err)
	}
	if !rep.OK() || len(rep.Files) != 3 {
		t.Fatalf("intact %v over %d files; problems %v", rep.OK(), len(rep.Files), rep.Problems)
	}
}
