package inflight

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/funcr"
	"github.com/prometheus/client_golang/prometheus"
)

const (
	volA = `\\?\Volume{452e318a-5cde-421e-9831-b9853c521012}\`
	volB = `\\?\Volume{0c9b2f1e-1111-4d2a-9d7e-3f1b2c3d4e5f}\`
)

// start is when the tests' operations start: 14:03:07 UTC.
var start = time.Date(2026, 12, 2, 14, 3, 7, 0, time.UTC)

// clock is a time the tests move.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }

func (c *clock) add(d time.Duration) { c.mu.Lock(); c.t = c.t.Add(d); c.mu.Unlock() }

// logs collects the lines a Table logs.
type logs struct {
	mu    sync.Mutex
	lines []string
}

func (l *logs) logger() logr.Logger {
	return funcr.New(func(prefix, args string) {
		l.mu.Lock()
		defer l.mu.Unlock()
		l.lines = append(l.lines, args)
	}, funcr.Options{})
}

func (l *logs) all() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.lines...)
}

// testTable is a volume Table on a test clock, with its metrics, its log
// and the timers it set (run by hand).
type testTable struct {
	*Table
	clock   *clock
	metrics *Metrics
	logs    *logs
	mu      sync.Mutex
	timers  []func()
}

func newTestTable(t *testing.T) *testTable {
	t.Helper()
	m, err := NewMetrics(prometheus.NewRegistry())
	if err != nil {
		t.Fatal(err)
	}
	tt := &testTable{clock: &clock{t: start}, metrics: m, logs: &logs{}}
	tt.Table = New("volume", m, tt.logs.logger())
	tt.now = tt.clock.now
	tt.afterFunc = func(d time.Duration, f func()) *time.Timer {
		tt.mu.Lock()
		defer tt.mu.Unlock()
		tt.timers = append(tt.timers, f)
		return nil
	}
	return tt
}

// fireTimers runs the timers set so far (a timer may fire early: a
// timer's func must check the time itself).
func (tt *testTable) fireTimers() {
	tt.mu.Lock()
	fs := append([]func(){}, tt.timers...)
	tt.mu.Unlock()
	for _, f := range fs {
		f()
	}
}

func mustBegin(t *testing.T, tab *Table, key Key, op string) *Token {
	t.Helper()
	tok, err := tab.Begin(context.Background(), key, op)
	if err != nil {
		t.Fatalf("Begin %s %s: %v", key, op, err)
	}
	return tok
}

// refused checks that Begin refuses with want, as codes.Aborted.
func refused(t *testing.T, tab *Table, key Key, op, want string) {
	t.Helper()
	tok, err := tab.Begin(context.Background(), key, op)
	if err == nil {
		tok.Done()
		t.Fatalf("Begin %s %s ran; want it refused with %q", key, op, want)
	}
	if err.Error() != want {
		t.Fatalf("Begin %s %s:\n got %q\nwant %q", key, op, err, want)
	}
	if c := codeOf(err); c != "Aborted" {
		t.Fatalf("Begin %s %s answers %s, want Aborted", key, op, c)
	}
}

// answers is a settle check whose answers the test gives one by one, and
// which counts the checks running at once.
type answers struct {
	calls   chan struct{} // a check started
	answer  chan bool     // its answer
	mu      sync.Mutex
	running int
	most    int
}

func newAnswers() *answers {
	return &answers{calls: make(chan struct{}, 100), answer: make(chan bool, 100)}
}

func (a *answers) check(ctx context.Context) (bool, error) {
	a.mu.Lock()
	a.running++
	a.most = max(a.most, a.running)
	a.mu.Unlock()
	defer func() { a.mu.Lock(); a.running--; a.mu.Unlock() }()
	a.calls <- struct{}{}
	return <-a.answer, nil
}
