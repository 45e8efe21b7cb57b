package audit_test

import (
	"bytes"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"github.com/pipeguard/pipeguard/agent/audit"
)

// chainEnd returns the seq and hash of the last valid record of path.
func chainEnd(t *testing.T, path string) (uint64, audit.Hash) {
	t.Helper()
	var seq uint64
	var h audit.Hash
	if err := audit.ScanFile(path, func(r audit.Record) error {
		if r.Err == nil {
			seq, h = r.Seq, audit.Link(r.Prev, r.Raw)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return seq, h
}

// oldRecord is a record as an agent without record bounds wrote it: its
// user agent holds n bytes.
func oldRecord(t *testing.T, seq uint64, prev audit.Hash, n int) []byte {
	t.Helper()
	ev := event("old-" + strconv.Itoa(n))
	ev.UserAgent = strings.Repeat("u", n)
	ev.Annotations[audit.AnnotationSeq] = strconv.FormatUint(seq, 10)
	ev.Annotations[audit.AnnotationPrevHash] = prev.String()
	b, err := json.Marshal(ev)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func appendBytes(t *testing.T, path string, b ...[]byte) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for _, p := range b {
		if _, err := f.Write(p); err != nil {
			t.Fatal(err)
		}
	}
}

// startCheckpoint returns the annotations of the last start checkpoint.
func startCheckpoint(t *testing.T, path string) map[string]string {
	t.Helper()
	var a map[string]string
	audit.ScanFile(path, func(r audit.Record) error {
		if r.Err == nil && r.Event.Annotation(audit.AnnotationCheckpoint) == "start" {
			a = r.Event.Annotations
		}
		return nil
	})
	if a == nil {
		t.Fatalf("no start checkpoint in %s", path)
	}
	return a
}

// TestOpenContinuesAfterHugeLastRecord: a 20 MiB last record, as an older
// agent wrote it, is continued from, with the memory Open takes not growing
// with it; with torn bytes after it too.
func TestOpenContinuesAfterHugeLastRecord(t *testing.T) {
	for _, torn := range []string{"", `{"kind":"Event","apiVer`} {
		t.Run("torn="+strconv.Itoa(len(torn)), func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "audit.log")
			l := openLog(t, path)
			l.Append(event("a"), true)
			l.Close()
			seq, h := chainEnd(t, path)
			huge := oldRecord(t, seq+1, h, 20*mib)
			appendBytes(t, path, huge, []byte("\n"), []byte(torn))
			hugeHash := audit.Link(h, huge)
			huge = nil
			runtime.GC()

			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			l, err := audit.Open(audit.Options{Path: path})
			runtime.ReadMemStats(&after)
			if err != nil {
				t.Fatalf("Open after a 20 MiB record: %v", err)
			}
			l.Close()
			if n := after.TotalAlloc - before.TotalAlloc; n > 2*mib {
				t.Errorf("Open allocated %d bytes reading a 20 MiB last record", n)
			}
			var start audit.Record
			audit.ScanFile(path, func(r audit.Record) error {
				if r.Err == nil && r.Event.Annotation(audit.AnnotationCheckpoint) == "start" {
					start = r
				}
				return nil
			})
			if start.Seq != seq+2 || start.Prev != hugeHash {
				t.Errorf("start checkpoint seq %d prev %s, want seq %d prev %s (the 20 MiB record's hash)", start.Seq, start.Prev.Short(), seq+2, hugeHash.Short())
			}
			if got := start.Event.Annotation(audit.AnnotationTornBytes); got != strconv.Itoa(len(torn)) && (torn != "" || got != "") {
				t.Errorf("torn-bytes %q, want %d", got, len(torn))
			}
			if rep := verify(t, path); !rep.OK() {
				t.Errorf("verify: %v", rep.Problems)
			}
		})
	}
}

// TestOpenSetsAsideInvalidLastLines: a log whose last lines are not valid
// records (garbage; a record with its chain field edited away; a 20 MiB
// line broken in the middle) is not refused: the file is rotated with
// those bytes at its end, the chain continues from the last valid record,
// the start checkpoint says what was found, and verify still fails, with
// the lines as problems and a notice saying what the agent did.
func TestOpenSetsAsideInvalidLastLines(t *testing.T) {
	cases := map[string]func(seq uint64, h audit.Hash) []byte{
		"garbage": func(uint64, audit.Hash) []byte { return []byte("this is not a record") },
		"edited": func(seq uint64, h audit.Hash) []byte {
			return []byte(strings.Replace(string(oldRecord(t, seq+1, h, 10)), `"pipeguard.io/seq"`, `"pipeguard.io/sequence"`, 1))
		},
		"huge and broken": func(seq uint64, h audit.Hash) []byte {
			b := oldRecord(t, seq+1, h, 20*mib)
			b[10*mib] = 0x01 // a control character inside the user agent string
			return b
		},
	}
	for name, bad := range cases {
		t.Run(name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "audit.log")
			l := openLog(t, path)
			l.Append(event("a"), true)
			l.Close()
			seq, h := chainEnd(t, path)
			b := bad(seq, h)
			appendBytes(t, path, b, []byte("\n"))

			l, err := audit.Open(audit.Options{Path: path})
			if err != nil {
				t.Fatalf("Open: %v", err)
			}
			l.Append(event("b"), true)
			l.Close()
			a := startCheckpoint(t, path)
			if a[audit.AnnotationSkippedBytes] != strconv.Itoa(len(b)+1) || a[audit.AnnotationSkippedFile] == "" || a[audit.AnnotationSkippedFile] != a[audit.AnnotationPreviousFile] {
				t.Errorf("start checkpoint annotations %v, want %d skipped bytes in the previous file", a, len(b)+1)
			}
			if why := a[audit.AnnotationSkipped]; !strings.Contains(why, "after record seq "+strconv.FormatUint(seq, 10)) || !strings.Contains(why, "; the last of them at bytes ") {
				t.Errorf("skipped = %q", why)
			}
			rep := verify(t, path)
			if rep.OK() || len(rep.Problems) != 1 || !strings.Contains(rep.Problems[0].Msg, "line is not a valid audit record") ||
				!strings.HasSuffix(rep.Problems[0].Where, a[audit.AnnotationSkippedFile]+":4") { // start, a, stop, then the line
				t.Fatalf("verify: ok %v, problems %v; want the one invalid line", rep.OK(), rep.Problems)
			}
			found := false
			for _, n := range rep.Notices {
				found = found || strings.Contains(n.Msg, "when the agent started it found "+strconv.Itoa(len(b)+1)+" bytes at the end of "+a[audit.AnnotationSkippedFile]+" that are not valid audit records") &&
					strings.Contains(n.Msg, "continued the chain from the last valid record")
			}
			if !found {
				t.Errorf("no notice explains the restart: %v", rep.Notices)
			}
		})
	}
}

// TestScanBoundsALine: verification reads past a line longer than
// MaxScanLine without keeping it, reports it, and goes on with the next.
func TestScanBoundsALine(t *testing.T) {
	next, _ := json.Marshal(event("next"))
	long := io.LimitReader(repeatByte('x'), audit.MaxScanLine+1)
	r := io.MultiReader(long, strings.NewReader("\n"), bytes.NewReader(next), strings.NewReader("\n"))
	var got []audit.Record
	if err := audit.Scan(r, "big.log", func(rec audit.Record) error { got = append(got, rec); return nil }); err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0].Err == nil || got[0].Raw != nil || got[1].Line != 2 || got[1].Event.AuditID != "next" {
		t.Fatalf("records %+v", got)
	}
	want := "the line is 67108865 bytes, more than the 67108864 bytes (MaxScanLine) verification reads of one record; pipeguard-agent writes records of at most 524288 bytes"
	if got[0].Err.Error() != want {
		t.Errorf("error %q, want %q", got[0].Err, want)
	}
}

type repeatByte byte

func (b repeatByte) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = byte(b)
	}
	return len(p), nil
}
