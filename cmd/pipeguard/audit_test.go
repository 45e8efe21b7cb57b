package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"

	"github.com/pipeguard/pipeguard/agent/audit"
	"github.com/pipeguard/pipeguard/agent/audit/review"
)

var t0 = time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)

type who struct{ user, pid, ns, pod, sa string }

var (
	csiNode = who{"pipeguard:peer:uid:0", "4242", "kube-system", "csi-node-x", "csi-node"}
	debug   = who{"pipeguard:peer:uid:0", "77", "default", "debug", "default"}
	shell   = who{"pipeguard:peer:uid:1000", "99", "", "", ""}
)

func event(id string, at int, stage audit.Stage, w who, group, method, decision, rule, code, reason string) *audit.Event {
	extra := map[string][]string{audit.ExtraPID: {w.pid}}
	if w.pod != "" {
		extra[audit.ExtraPodName] = []string{w.pod}
		extra[audit.ExtraNamespace] = []string{w.ns}
		extra[audit.ExtraServiceAccount] = []string{w.sa}
	}
	ts := audit.MicroTime{Time: t0.Add(time.Duration(at) * time.Minute)}
	e := &audit.Event{Kind: audit.Kind, APIVersion: audit.APIVersion, Level: audit.LevelMetadata, AuditID: id, Stage: stage,
		RequestURI: "/v1." + group + "/" + method, Verb: method, User: audit.UserInfo{Username: w.user, Extra: extra},
		ObjectRef:                &audit.ObjectReference{Resource: group, APIVersion: "v1", Name: "/var/lib/kubelet/x"},
		RequestReceivedTimestamp: ts, StageTimestamp: ts,
		Annotations: map[string]string{audit.AnnotationRecord: audit.RecordRequest, audit.AnnotationDecision: decision},
	}
	if stage == audit.StageResponseComplete {
		e.Annotations[audit.AnnotationGRPCCode] = code
	}
	if rule != "" {
		e.Annotations[audit.AnnotationRule] = rule
		e.Annotations[audit.AnnotationReason] = reason
	}
	return e
}

// writeLog writes a small log through the agent's writer and returns its
// path.
func writeLog(t *testing.T, maxSize int64) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "audit.log")
	clock := t0
	l, err := audit.Open(audit.Options{Path: path, MaxSize: maxSize, Log: logr.Discard(), Now: func() time.Time { clock = clock.Add(time.Second); return clock }})
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range []*audit.Event{
		event("a1", 0, audit.StageRequestReceived, csiNode, "filesystem", "Mkdir", "allow", "", "", ""),
		event("a1", 0, audit.StageResponseComplete, csiNode, "filesystem", "Mkdir", "allow", "", "OK", ""),
		event("a2", 1, audit.StageResponseComplete, csiNode, "filesystem", "PathExists", "allow", "", "OK", ""),
		event("a3", 2, audit.StageResponseComplete, debug, "disk", "PartitionDisk", "deny", "disk-volume-csi-only", "PermissionDenied", "disk v1 PartitionDisk is allowed only to ..."),
		event("a4", 3, audit.StageResponseComplete, shell, "filesystem", "Mkdir", "deny", "confinement/outside-roots", "PermissionDenied", `path: path "/etc/x" is outside the allowed roots`),
		event("a5", 4, audit.StageRequestReceived, csiNode, "volume", "FormatVolume", "allow", "", "", ""),
		event("a6", 5, audit.StageResponseComplete, debug, "disk", "PartitionDisk", "deny", "disk-volume-csi-only", "PermissionDenied", "disk v1 PartitionDisk is allowed only to ..."),
	} {
		if err := l.Append(e, true); err != nil {
			t.Fatal(err)
		}
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	return path
}

const queryTable = `TIME                  DECISION    CODE              METHOD                    CALLER                          POD                     DETAIL
2025-03-01T12:00:00Z  ALLOW       OK                filesystem v1 Mkdir       pipeguard:peer:uid:0 pid 4242   kube-system/csi-node-x  /var/lib/kubelet/x
2025-03-01T12:01:00Z  ALLOW       OK                filesystem v1 PathExists  pipeguard:peer:uid:0 pid 4242   kube-system/csi-node-x  /var/lib/kubelet/x
2025-03-01T12:02:00Z  DENY        PermissionDenied  disk v1 PartitionDisk     pipeguard:peer:uid:0 pid 77     default/debug           [disk-volume-csi-only] disk v1 PartitionDisk is allowed only to ...
2025-03-01T12:03:00Z  DENY        PermissionDenied  filesystem v1 Mkdir       pipeguard:peer:uid:1000 pid 99  -                       [confinement/outside-roots] path: path "/etc/x" is outside the allowed roots
2025-03-01T12:04:00Z  INCOMPLETE  -                 volume v1 FormatVolume    pipeguard:peer:uid:0 pid 4242   kube-system/csi-node-x  /var/lib/kubelet/x
2025-03-01T12:05:00Z  DENY        PermissionDenied  disk v1 PartitionDisk     pipeguard:peer:uid:0 pid 77     default/debug           [disk-volume-csi-only] disk v1 PartitionDisk is allowed only to ...
`

func TestAuditQuery(t *testing.T) {
	path := writeLog(t, 0)
	cases := map[string]struct {
		args  []string
		code  int
		want  string // exact stdout
		lines int    // for json
		err   string
	}{
		"everything as a table":              {args: []string{"audit", "query", path}, want: queryTable},
		"denied, json, flags after the path": {args: []string{"audit", "query", path, "--decision", "deny", "-o", "json"}, lines: 3},
		"pod":                                {args: []string{"audit", "query", "-o", "json", "--pod", "default/debug", path}, lines: 2},
		"namespace":                          {args: []string{"audit", "query", "-o", "json", "--namespace", "kube-system", path}, lines: 3},
		"caller by pid":                      {args: []string{"audit", "query", "-o", "json", "--caller", "99", path}, lines: 1},
		"caller by service account":          {args: []string{"audit", "query", "-o", "json", "--caller", "kube-system:csi-node", path}, lines: 3},
		"method by group":                    {args: []string{"audit", "query", "-o", "json", "--method", "filesystem/Mkdir", path}, lines: 2},
		"time window":                        {args: []string{"audit", "query", "-o", "json", "--since", "2025-03-01T12:01:00Z", "--until", "2025-03-01T12:03:00Z", path}, lines: 2},
		"bad decision":                       {args: []string{"audit", "query", "--decision", "maybe", path}, code: 2, err: `--decision "maybe": want allow or deny`},
		"bad time":                           {args: []string{"audit", "query", "--since", "yesterday", path}, code: 2, err: `--since "yesterday": want an RFC 3339 time such as 2025-03-01T12:00:00Z, or a duration before now such as 90m`},
		"missing log":                        {args: []string{"audit", "query", filepath.Join(t.TempDir(), "nope.log")}, code: 2, err: "no audit log at"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			code, out, errOut := runCLI(t, "", tc.args...)
			if code != tc.code || !strings.Contains(errOut, tc.err) {
				t.Fatalf("exit %d, stderr %q; want %d, %q", code, errOut, tc.code, tc.err)
			}
			if tc.want != "" && out != tc.want {
				t.Fatalf("stdout:\n%s\nwant:\n%s", out, tc.want)
			}
			if tc.lines > 0 && strings.Count(out, "\n") != tc.lines {
				t.Fatalf("%d lines, want %d:\n%s", strings.Count(out, "\n"), tc.lines, out)
			}
		})
	}
}

func TestAuditSummary(t *testing.T) {
	path := writeLog(t, 0)
	b, _ := os.ReadFile(path)
	code, out, errOut := runCLI(t, string(b), "audit", "summary") // from stdin
	want := `6 requests from 2025-03-01T12:00:00Z to 2025-03-01T12:05:00Z: 2 allowed, 3 denied, 1 incomplete

CALLER                                METHOD                    DECISION    COUNT
default/debug (sa default)            disk v1 PartitionDisk     DENY        2
kube-system/csi-node-x (sa csi-node)  filesystem v1 Mkdir       ALLOW       1
kube-system/csi-node-x (sa csi-node)  filesystem v1 PathExists  ALLOW       1
kube-system/csi-node-x (sa csi-node)  volume v1 FormatVolume    INCOMPLETE  1
pipeguard:peer:uid:1000               filesystem v1 Mkdir       DENY        1

Top denied:
CALLER                      METHOD                 RULE                       COUNT
default/debug (sa default)  disk v1 PartitionDisk  disk-volume-csi-only       2
pipeguard:peer:uid:1000     filesystem v1 Mkdir    confinement/outside-roots  1
`
	if code != 0 || out != want {
		t.Fatalf("exit %d stderr %q\n%s\nwant\n%s", code, errOut, out, want)
	}
}

// TestAuditVerify is the contract external checks rely on: `pipeguard
// audit verify PATH` exits 0 only when the whole chain is intact.
func TestAuditVerify(t *testing.T) {
	cases := map[string]struct {
		tamper func(t *testing.T, path string)
		stdin  bool
		code   int
		want   string
	}{
		"intact, rotated":      {want: "OK: audit chain intact: 17 records, seq 1–17, in 9 files\n"},
		"intact, from stdin":   {stdin: true, want: "OK: audit chain intact: "},
		"edited record":        {code: 1, tamper: editRecord, want: "FAIL: "},
		"deleted rotated file": {code: 1, tamper: deleteMiddleFile, want: "are missing between"},
		"torn final line": {tamper: func(t *testing.T, path string) {
			f, _ := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
			f.WriteString(`{"kind":"Ev`)
			f.Close()
		}, want: "torn final line (11 bytes without a newline)"},
		"not a log": {code: 1, tamper: func(t *testing.T, path string) {
			os.WriteFile(path, []byte("hello\n"), 0o600)
		}, want: "line is not a valid audit record"},
		"missing": {code: 2, tamper: func(t *testing.T, path string) {
			files, _ := audit.Files(path)
			for _, f := range files {
				os.Remove(f)
			}
		}, want: "give the --audit-log-path of the agent"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			path := writeLog(t, 1200)
			if tc.tamper != nil {
				tc.tamper(t, path)
			}
			var code int
			var out, errOut string
			if tc.stdin {
				files, _ := audit.Files(path)
				var all []byte
				for _, f := range files {
					b, _ := os.ReadFile(f)
					all = append(all, b...)
				}
				code, out, errOut = runCLI(t, string(all), "audit", "verify", "-")
			} else {
				code, out, errOut = runCLI(t, "", "audit", "verify", path)
			}
			if code != tc.code || !strings.Contains(out+errOut, tc.want) {
				t.Fatalf("exit %d (want %d)\nstdout %s\nstderr %s\nwant %q", code, tc.code, out, errOut, tc.want)
			}
		})
	}
}

func editRecord(t *testing.T, path string) {
	files, _ := audit.Files(path)
	b, _ := os.ReadFile(files[1])
	os.WriteFile(files[1], bytes.Replace(b, []byte(`"deny"`), []byte(`"allow"`), 1), 0o600)
	if bytes.Equal(b, bytes.Replace(b, []byte(`"deny"`), []byte(`"allow"`), 1)) {
		b = bytes.Replace(b, []byte(`"allow"`), []byte(`"deny"`), 1)
		os.WriteFile(files[1], b, 0o600)
	}
}

func deleteMiddleFile(t *testing.T, path string) {
	files, _ := audit.Files(path)
	if len(files) < 3 {
		t.Fatalf("want rotated files, got %v", files)
	}
	os.Remove(files[1])
}

// syncBuffer is a buffer written by one goroutine and read by another.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}
func (s *syncBuffer) String() string { s.mu.Lock(); defer s.mu.Unlock(); return s.b.String() }

func TestAuditQueryFollow(t *testing.T) {
	path := filepath.Join(t.TempDir(), "audit.log")
	l, err := audit.Open(audit.Options{Path: path, MaxSize: 1500, Log: logr.Discard()})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	ctx, cancel := context.WithCancel(context.Background())
	var out syncBuffer
	done := make(chan int, 1)
	go func() { done <- follow(ctx, path, review.Filter{Decision: "deny"}, "table", &out, &bytes.Buffer{}) }()
	waitFor := func(denials int) {
		t.Helper()
		// Poll under a deadline for the followed denials; the pause only spares the CPU.
		for deadline := time.Now().Add(20 * time.Second); strings.Count(out.String(), "DENY") < denials; time.Sleep(20 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("followed:\n%s", out.String())
			}
		}
	}
	deny := func(i int) {
		l.Append(event("f"+string(rune('0'+i)), i, audit.StageResponseComplete, debug, "disk", "PartitionDisk", "deny", "disk-volume-csi-only", "PermissionDenied", "no"), false)
	}
	// Follow from the first record on, like tail -F: once the follower has
	// shown it, write enough more to rotate the file under the follower.
	deny(0)
	waitFor(1)
	for i := range 6 {
		if i > 0 {
			deny(i)
		}
		l.Append(event("g"+string(rune('0'+i)), i, audit.StageResponseComplete, csiNode, "filesystem", "PathExists", "allow", "", "OK", ""), false)
	}
	waitFor(6)
	cancel()
	if code := <-done; code != 0 || strings.Contains(out.String(), "ALLOW") {
		t.Fatalf("exit %d, output:\n%s", code, out.String())
	}
	if backups, _ := audit.Backups(path); len(backups) == 0 {
		t.Fatal("the log did not rotate under the follower")
	}
	lines := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
	for _, l := range lines[1:] {
		if got, want := columnStarts(l), columnStarts(lines[0]); !slices.Equal(got, want) {
			t.Errorf("followed row %q\nstarts its columns at %v, the header at %v", l, got, want)
		}
	}
}

// columnStarts returns where each column of an aligned line starts: after
// a run of two or more spaces.
func columnStarts(line string) []int {
	starts := []int{0}
	for i := 2; i < len(line); i++ {
		if line[i] != ' ' && line[i-1] == ' ' && line[i-2] == ' ' {
			starts = append(starts, i)
		}
	}
	return starts
}

// TestFollowColumnsLineUp: --follow prints each row as it comes, and the
// columns of every row start where the header's do, for values of the
// usual widths; a wider value widens its column from that row on.
func TestFollowColumnsLineUp(t *testing.T) {
	var out strings.Builder
	rows := &alignedRows{w: &out, widths: followWidths}
	lines := []string{
		"TIME\tDECISION\tCODE\tMETHOD\tCALLER\tPOD\tDETAIL\n",
		"2026-11-27T08:09:47Z\tALLOW\tOK\tfilesystem v1 PathExists\tcsi-node pid 42\tkube-system/csi-node-abcde\t-\n",
		"2026-11-27T08:09:48Z\tDENY\tPermissionDenied\tdisk v1 PartitionDisk\tdebug pid 7\tteam-a/debug\t[disk-volume-csi-only] no\n",
	}
	for _, l := range lines {
		if err := rows.write(l); err != nil {
			t.Fatal(err)
		}
	}
	got := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
	want := columnStarts(got[0])
	if len(want) != 7 {
		t.Fatalf("header %q has %d columns", got[0], len(want))
	}
	for _, l := range got[1:] {
		if starts := columnStarts(l); !slices.Equal(starts, want) {
			t.Errorf("row %q\nstarts its columns at %v, the header at %v", l, starts, want)
		}
	}
	// A method wider than its column moves the columns after it, from
	// that row on, and keeps them there.
	long := "2026-11-27T08:09:49Z\tALLOW\tOK\t" + strings.Repeat("m", 50) + "\tcsi-node\tkube-system/x\t-\n"
	if err := rows.write(long); err != nil {
		t.Fatal(err)
	}
	if err := rows.write(lines[1]); err != nil {
		t.Fatal(err)
	}
	got = strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
	if a, b := columnStarts(got[3]), columnStarts(got[4]); !slices.Equal(a, b) || a[4] <= want[4] {
		t.Errorf("after a wide method the rows start at %v and %v, the header at %v", a, b, want)
	}
}
