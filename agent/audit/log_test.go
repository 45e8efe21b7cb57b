package audit

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-logr/logr"
)

func request(i int, decision string) *Event {
	t := time.Date(2025, 3, 1, 12, 0, i%60, 0, time.UTC)
	return &Event{
		Kind: Kind, APIVersion: APIVersion, Level: LevelMetadata, AuditID: fmt.Sprintf("id-%d", i),
		Stage: StageResponseComplete, RequestURI: "/v1.Filesystem/Mkdir", Verb: "Mkdir",
		User:                     UserInfo{Username: "pipeguard:peer:uid:0", Extra: map[string][]string{ExtraPID: {"42"}}},
		ObjectRef:                &ObjectReference{Resource: "filesystem", APIVersion: "v1", Name: fmt.Sprintf("/k/%d", i)},
		RequestReceivedTimestamp: MicroTime{t}, StageTimestamp: MicroTime{t},
		Annotations: map[string]string{AnnotationRecord: RecordRequest, AnnotationDecision: decision},
	}
}

func openLog(t *testing.T, o Options) *Log {
	t.Helper()
	o.Log = logr.Discard()
	l, err := Open(o)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	return l
}

func write(t *testing.T, l *Log, from, n int) {
	t.Helper()
	for i := from; i < from+n; i++ {
		if err := l.Append(request(i, DecisionAllow), i%2 == 0); err != nil {
			t.Fatalf("Append %d: %v", i, err)
		}
	}
}

func verify(t *testing.T, path string) *Report {
	t.Helper()
	files, err := Files(path)
	if err != nil {
		t.Fatal(err)
	}
	rep, err := Verify(Source{Paths: files})
	if err != nil {
		t.Fatal(err)
	}
	return rep
}

func TestChainAcrossRotationAndRestart(t *testing.T) {
	path := filepath.Join(t.TempDir(), "audit.log")
	clock := time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)
	now := func() time.Time { clock = clock.Add(time.Millisecond); return clock }
	l := openLog(t, Options{Path: path, MaxSize: 4096, CheckpointEvery: 7, Now: now})
	write(t, l, 0, 40)
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	l = openLog(t, Options{Path: path, MaxSize: 4096, CheckpointEvery: 7, Now: now})
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

func mustFiles(t *testing.T, path string) []string {
	t.Helper()
	f, err := Files(path)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

func TestTornTailIsRotatedAndReported(t *testing.T) {
	path := filepath.Join(t.TempDir(), "audit.log")
	l := openLog(t, Options{Path: path})
	write(t, l, 0, 3)
	// The agent crashes: its handle on the file goes with its process
	// (on Windows, an open handle would keep the file from being renamed).
	_ = l.f.Close()
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
	l = openLog(t, Options{Path: path})
	write(t, l, 3, 2)
	l.Close()
	rep = verify(t, path)
	if !rep.OK() || len(rep.Files) != 2 || len(rep.Notices) != 2 || !strings.Contains(rep.Notices[0].Msg, "torn final line (60 bytes without a newline): a write cut short when the agent stopped, recorded by the agent when it restarted") {
		t.Fatalf("after restart: ok=%v files=%v problems=%v notices=%v", rep.OK(), rep.Files, rep.Problems, rep.Notices)
	}
	var start Event
	scanFile(path, func(r Record) error { start = r.Event; return errStop })
	if start.Annotation(AnnotationTornBytes) != "60" || start.Annotation(AnnotationCheckpoint) != "start" {
		t.Fatalf("start checkpoint annotations: %v", start.Annotations)
	}
}

func TestPruneKeepsChainVerifiable(t *testing.T) {
	path := filepath.Join(t.TempDir(), "audit.log")
	clock := time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)
	now := func() time.Time { clock = clock.Add(time.Second); return clock }
	l := openLog(t, Options{Path: path, MaxSize: 2048, MaxBackups: 2, Now: now})
	write(t, l, 0, 60)
	l.Close()
	backups, _ := Backups(path)
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
			l := openLog(t, Options{Path: path, MaxSize: 3000, Now: func() time.Time { clock = clock.Add(time.Second); return clock }})
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

func readLines(t *testing.T, path string) []string {
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return strings.SplitAfter(string(b), "\n")
}

func writeLines(t *testing.T, path string, lines []string) {
	if err := os.WriteFile(path, []byte(strings.Join(lines, "")), 0o600); err != nil {
		t.Fatal(err)
	}
}

// editLine replaces line n (from 1); an empty result deletes it.
func editLine(t *testing.T, path string, n int, f func(string) string) {
	lines := readLines(t, path)
	s := f(strings.TrimSuffix(lines[n-1], "\n"))
	if s == "" {
		lines = append(lines[:n-1], lines[n:]...)
	} else {
		lines[n-1] = s + "\n"
	}
	writeLines(t, path, lines)
}

// failingFile fails writes after a number of bytes, as a full disk does.
type failingFile struct {
	mu       sync.Mutex
	buf      bytes.Buffer
	room     int
	syncs    atomic.Int64
	syncFail bool
}

func (f *failingFile) Write(p []byte) (int, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(p) > f.room {
		n := f.room
		f.buf.Write(p[:n])
		f.room = 0
		return n, errors.New("no space left on device")
	}
	f.room -= len(p)
	return f.buf.Write(p)
}
func (f *failingFile) Sync() error {
	f.syncs.Add(1)
	if f.syncFail {
		return errors.New("input/output error")
	}
	return nil
}
func (f *failingFile) Truncate(n int64) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.buf.Truncate(int(n))
	return nil
}
func (f *failingFile) Close() error { return nil }

func TestWriteFailureLeavesNoPartialRecord(t *testing.T) {
	ff := &failingFile{room: 1500}
	l := openLog(t, Options{Path: filepath.Join(t.TempDir(), "audit.log"), OpenFile: func(string) (File, error) { return ff, nil }})
	var err error
	i := 0
	for ; err == nil; i++ {
		err = l.Append(request(i, DecisionAllow), false)
	}
	if !strings.Contains(err.Error(), "writing audit record to") || !strings.Contains(err.Error(), "no space left on device") {
		t.Fatalf("error: %v", err)
	}
	seq := l.Seq()
	rep, _ := Verify(Source{Reader: bytes.NewReader(ff.buf.Bytes()), Name: "mem"})
	if !rep.OK() || rep.Last != seq || len(rep.Notices) != 1 || rep.Notices[0].Msg != NoAnchorNotice {
		t.Fatalf("after a failed write: ok=%v last=%d seq=%d problems=%v notices=%v", rep.OK(), rep.Last, seq, rep.Problems, rep.Notices)
	}
}

func TestDurableAppendsShareSyncs(t *testing.T) {
	ff := &failingFile{room: 1 << 30}
	l := openLog(t, Options{Path: filepath.Join(t.TempDir(), "audit.log"), OpenFile: func(string) (File, error) { return ff, nil }})
	before := ff.syncs.Load()
	var wg sync.WaitGroup
	for w := range 16 {
		wg.Go(func() {
			for i := range 50 {
				if err := l.Append(request(w*100+i, DecisionAllow), true); err != nil {
					t.Error(err)
				}
			}
		})
	}
	wg.Wait()
	if n := ff.syncs.Load() - before; n > 800 || n == 0 {
		t.Fatalf("%d fsyncs for 800 durable appends", n)
	}
	t.Logf("%d fsyncs for 800 durable appends from 16 writers", ff.syncs.Load()-before)
	ff.syncFail = true
	if err := l.Append(request(1, DecisionAllow), true); err == nil || !strings.Contains(err.Error(), "syncing the audit log") {
		t.Fatalf("append with failing fsync: %v", err)
	}
}

func BenchmarkAppend(b *testing.B) {
	l, err := Open(Options{Path: filepath.Join(b.TempDir(), "audit.log"), Log: logr.Discard()})
	if err != nil {
		b.Fatal(err)
	}
	defer l.Close()
	for i := 0; b.Loop(); i++ {
		if err := l.Append(request(i, DecisionAllow), false); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkRecordParts splits the cost of one record of a read call from a
// resolved pod, as the agent writes it at Metadata level, into the parts
// every record needs: encoding, chain hashing (SHA-256 over the previous
// hash and the line) and the write(2) that puts it in the file. Their sum
// is the least an audited request costs beyond an unaudited one.
func BenchmarkRecordParts(b *testing.B) {
	t := time.Date(2026, 11, 21, 12, 0, 0, 123456000, time.UTC)
	ev := &Event{
		Kind: Kind, APIVersion: APIVersion, Level: LevelMetadata, AuditID: "2cd3373b-8f2b-4ee5-9465-c9ddeacb26cb",
		Stage: StageResponseComplete, RequestURI: "/v1.Filesystem/PathExists", Verb: "PathExists",
		User: UserInfo{Username: "pipeguard:peer:uid:0", Extra: map[string][]string{
			ExtraPID: {"2738"}, ExtraProcessStart: {"2026-11-21T11:58:34.53Z"}, ExtraUID: {"0"}, ExtraGID: {"0"},
			ExtraContainerID: {"3f1c9a0e7b2d4c5f8a6e1d0b9c8f7e6d5a4b3c2d1e0f9a8b7c6d5e4f3a2b1c0d"},
			ExtraPodUID:      {"8d2c6f4e-1a3b-4c5d-9e7f-0a1b2c3d4e5f"}, ExtraPodName: {"csi-smb-node-win-7xk2p"},
			ExtraNamespace: {"kube-system"}, ExtraServiceAccount: {"csi-smb-node-sa"}, ExtraSource: {"peer"},
		}},
		UserAgent:                "grpc-go/1.85.0",
		ObjectRef:                &ObjectReference{Resource: "filesystem", APIGroup: "csi-proxy", APIVersion: "v1", Name: "/var/lib/kubelet/pods/8d2c6f4e-1a3b-4c5d-9e7f-0a1b2c3d4e5f/volumes/kubernetes.io~csi/pvc-1/mount"},
		ResponseStatus:           &Status{Status: "Success", Reason: "OK", Code: 200},
		RequestReceivedTimestamp: MicroTime{t}, StageTimestamp: MicroTime{t.Add(90 * time.Microsecond)},
		Annotations: map[string]string{AnnotationRecord: RecordRequest, AnnotationDecision: DecisionAllow, AnnotationGRPCCode: "OK",
			AnnotationSeq: "123456", AnnotationPrevHash: Genesis().String()},
	}
	line, err := appendEvent(nil, ev)
	if err != nil {
		b.Fatal(err)
	}
	b.Run("encode", func(b *testing.B) {
		b.SetBytes(int64(len(line)))
		buf := make([]byte, 0, 2*len(line))
		for b.Loop() {
			buf, _ = appendEvent(buf[:0], ev)
		}
	})
	b.Run("hash", func(b *testing.B) {
		b.SetBytes(int64(len(line)))
		h := Genesis()
		for b.Loop() {
			h = Link(h, line)
		}
	})
	b.Run("write", func(b *testing.B) {
		f, err := os.OpenFile(filepath.Join(b.TempDir(), "audit.log"), os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
		if err != nil {
			b.Fatal(err)
		}
		defer f.Close()
		b.SetBytes(int64(len(line) + 1))
		line := append(line, '\n')
		for b.Loop() {
			if _, err := f.Write(line); err != nil {
				b.Fatal(err)
			}
		}
	})
}
