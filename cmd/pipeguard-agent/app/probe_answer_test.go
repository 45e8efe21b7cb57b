package app

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/funcr"

	"github.com/pipeguard/pipeguard/agent/audit"
)

// logLines is a logger whose lines the test reads.
type logLines struct {
	mu    sync.Mutex
	lines []string
}

func (l *logLines) logger() logr.Logger {
	return funcr.New(func(prefix, args string) {
		l.mu.Lock()
		defer l.mu.Unlock()
		l.lines = append(l.lines, prefix+" "+args)
	}, funcr.Options{})
}

func (l *logLines) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.Join(l.lines, "\n")
}

// TestProbeAnswersHoldNoPathOrError checks that a failing probe names the
// check that failed in fixed words, never the audit log's path or the
// error, which an unauthenticated caller must not read, and that both go
// to the agent's log instead.
func TestProbeAnswersHoldNoPathOrError(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "secret-dir")
	path := filepath.Join(dir, "audit.log")
	osErr := &os.PathError{Op: "write", Path: path, Err: syscall.ENOSPC}

	closed, err := audit.Open(audit.Options{Path: filepath.Join(dir, "closed", "audit.log"), Log: logr.Discard()})
	if err != nil {
		t.Fatal(err)
	}
	if err := closed.Close(); err != nil {
		t.Fatal(err)
	}
	stuck := &fakeAudit{path: path, hold: make(chan struct{})}
	t.Cleanup(func() { close(stuck.hold) })

	cases := map[string]struct {
		audit     auditState
		path      string
		answer    string
		leaks     []string // what the answer must not hold
		logHolds  []string // what the agent's log must hold
		shortWait bool
	}{
		"readyz, an OS error": {audit: &fakeAudit{path: path, err: osErr}, path: "/readyz", answer: answerAuditNotWritable,
			leaks: []string{dir, "audit.log", osErr.Error(), syscall.ENOSPC.Error(), "write"}, logHolds: []string{path, syscall.ENOSPC.Error()}},
		"readyz, the real log closed": {audit: closed, path: "/readyz", answer: answerAuditNotWritable,
			leaks: []string{dir, "audit.log", "closed"}, logHolds: []string{closed.Path(), "audit log is closed"}},
		"readyz, a stuck write": {audit: stuck, path: "/readyz", answer: answerAuditStuck,
			leaks: []string{dir, "audit.log", "lock"}, logHolds: []string{path, "a write is stuck"}, shortWait: true},
		"healthz, a stuck write": {audit: stuck, path: "/healthz", answer: answerLiveAuditStuck,
			leaks: []string{dir, "audit.log", "lock"}, logHolds: []string{path, "a write is stuck"}, shortWait: true},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			var logs logLines
			h := newHealth(tc.audit, logs.logger())
			h.listening.Store(true)
			if tc.shortWait {
				h.timeout = 1 // the check cannot end: waiting longer proves nothing
			}
			code, body := probe(t, h, tc.path)
			if code != 503 || body != tc.answer {
				t.Fatalf("GET %s = %d %q, want 503 %q", tc.path, code, body, tc.answer)
			}
			for _, s := range tc.leaks {
				if strings.Contains(body, s) {
					t.Errorf("GET %s answers %q, which holds %q", tc.path, body, s)
				}
			}
			for _, s := range tc.logHolds {
				if !strings.Contains(logs.String(), s) {
					t.Errorf("the agent's log does not hold %q:\n%s", s, logs.String())
				}
			}
		})
	}
}

// TestProbeFailuresLoggedOncePerChange checks that probes every few
// seconds on a broken audit log log its failure once, and once more when
// it is fixed, not once a probe.
func TestProbeFailuresLoggedOncePerChange(t *testing.T) {
	var logs logLines
	a := &fakeAudit{path: "/x/audit.log", err: errors.New("disk full")}
	h := newHealth(a, logs.logger())
	h.listening.Store(true)
	for range 5 {
		probe(t, h, "/readyz")
		probe(t, h, "/healthz") // passes: its state is its own
	}
	if n := strings.Count(logs.String(), "health probe failed"); n != 1 {
		t.Fatalf("5 failed probes logged %d failures, want 1:\n%s", n, logs.String())
	}
	a.err = nil
	for range 5 {
		if code, body := probe(t, h, "/readyz"); code != 200 {
			t.Fatalf("GET /readyz once fixed = %d %q", code, body)
		}
	}
	if n := strings.Count(logs.String(), "health probe passes again"); n != 1 {
		t.Fatalf("5 passing probes after a failure logged %d recoveries, want 1:\n%s", n, logs.String())
	}
}
