package runner

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pipeguard/pipeguard/agent/hostops/limits"
)

// slack is what a slow, shared machine may add to a deadline.
const slack = 10 * time.Second

// hangUntilDone is a runner whose calls end only with their context, except
// those answered by ok.
type hangUntilDone struct {
	ok    func(Command) bool
	calls atomic.Int32
}

func (h *hangUntilDone) Run(ctx context.Context, cmd Command) ([]byte, error) {
	h.calls.Add(1)
	if h.ok != nil && h.ok(cmd) {
		return []byte("done"), nil
	}
	<-ctx.Done()
	return nil, errors.New("exit status 1: killed")
}

func TestBoundedDeadlineNamesTheOperation(t *testing.T) {
	h := &hangUntilDone{ok: func(c Command) bool { return strings.Contains(c.Args[len(c.Args)-1], "quick") }}
	b := Bound(h, "disk", limits.Limits{Timeout: 200 * time.Millisecond, Concurrency: 1, Setting: "--host-call-timeout-disk"})
	start := time.Now()
	_, err := Script(context.Background(), b, "partitioning disk", "Initialize-Disk")
	if took := time.Since(start); took > 200*time.Millisecond+slack {
		t.Fatalf("returned after %v", took)
	}
	var de *limits.DeadlineError
	if !errors.As(err, &de) || !errors.Is(err, context.DeadlineExceeded) || de.Queued {
		t.Fatalf("err = %#v, want a limits.DeadlineError of a call that ran", err)
	}
	if want := "disk partitioning disk did not finish within 200ms (host operation deadline; --host-call-timeout-disk)"; err.Error() != want {
		t.Fatalf("err = %q, want %q", err, want)
	}
	// The slot was given back: the next call runs and succeeds.
	out, err := Script(context.Background(), b, "Get-Disk", "quick")
	if err != nil || string(out) != "done" {
		t.Fatalf("next call: %q, %v", out, err)
	}
}

func TestBoundedRequestDeadlineIsShorter(t *testing.T) {
	b := Bound(&hangUntilDone{}, "smb", limits.Limits{Timeout: time.Hour, Concurrency: 8, Setting: "--host-call-timeout-smb"})
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err := Script(ctx, b, "Get-SmbGlobalMapping", "x")
	if took := time.Since(start); took > 100*time.Millisecond+slack {
		t.Fatalf("returned after %v", took)
	}
	var de *limits.DeadlineError
	if errors.As(err, &de) || !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "smb Get-SmbGlobalMapping did not finish: the request ended first") {
		t.Fatalf("err = %v, want the request's own deadline", err)
	}
}

// gate counts the calls running at once and holds each until released.
type gate struct {
	running, max atomic.Int32
	started      chan string
	release      chan struct{}
}

func newGate() *gate { return &gate{started: make(chan string, 64), release: make(chan struct{})} }

func (g *gate) Run(_ context.Context, cmd Command) ([]byte, error) {
	n := g.running.Add(1)
	defer g.running.Add(-1)
	for {
		m := g.max.Load()
		if n <= m || g.max.CompareAndSwap(m, n) {
			break
		}
	}
	script := cmd.Args[len(cmd.Args)-1]
	g.started <- script[strings.LastIndex(script, " ")+1:]
	<-g.release // ignores its context: a process that does not end
	return nil, nil
}

func TestBoundedFormatCap(t *testing.T) {
	g := newGate()
	b := Bound(g, "volume", limits.Limits{Timeout: time.Hour, Concurrency: 8},
		limits.Class{Ops: formatOps, Limits: limits.Limits{Timeout: time.Hour, Concurrency: 2}})
	var wg sync.WaitGroup
	errs := make(chan error, 32)
	for i := range 32 {
		op := formatOps[i%2]
		wg.Go(func() {
			_, err := Script(context.Background(), b, op, op)
			errs <- err
		})
	}
	// Two start, and while they are held no other does.
	<-g.started
	<-g.started
	if n := g.running.Load(); n != 2 {
		t.Fatalf("%d running, want 2", n)
	}
	// Other operations of the group are not held back by the format cap.
	if _, err := Script(context.Background(), Bound(answer(""), "volume", limits.Limits{}), "Get-Volume", "x"); err != nil {
		t.Fatal(err)
	}
	close(g.release)
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	if len(g.started) != 30 {
		t.Fatalf("%d more started, want 30", len(g.started))
	}
	if m := g.max.Load(); m != 2 {
		t.Fatalf("%d ran at once, want at most and at least 2", m)
	}
}

func TestBoundedGroupCapSeparateFromFormat(t *testing.T) {
	g := newGate()
	b := Bound(g, "volume", limits.Limits{Timeout: time.Hour, Concurrency: 8},
		limits.Class{Ops: formatOps, Limits: limits.Limits{Timeout: time.Hour, Concurrency: 1}})
	var wg sync.WaitGroup
	wg.Go(func() { _, _ = Script(context.Background(), b, "Format-Volume", "format") })
	<-g.started
	// The format slot is taken; a mount still runs.
	wg.Go(func() { _, _ = Script(context.Background(), b, "Add-PartitionAccessPath", "mount") })
	if got := <-g.started; got != "mount" {
		t.Fatalf("started %q, want mount", got)
	}
	close(g.release)
	wg.Wait()
}

func TestBoundedQueuedPastDeadlineNeverStarts(t *testing.T) {
	g := newGate()
	b := Bound(g, "volume", limits.Limits{Timeout: time.Hour, Concurrency: 8},
		limits.Class{Ops: formatOps, Limits: limits.Limits{Timeout: 300 * time.Millisecond, Concurrency: 1, Setting: "--host-call-timeout-volume, --format-concurrency"}})
	done := make(chan error, 1)
	go func() {
		_, err := Script(context.Background(), b, "Format-Volume", "first")
		done <- err
	}()
	<-g.started
	start := time.Now()
	_, err := Script(context.Background(), b, "Resize-Partition", "second")
	if took := time.Since(start); took > 300*time.Millisecond+slack {
		t.Fatalf("returned after %v", took)
	}
	var de *limits.DeadlineError
	if !errors.As(err, &de) || !de.Queued || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err = %v, want a limits.DeadlineError of a call that never started", err)
	}
	if want := "volume Resize-Partition did not start within 300ms: all 1 slots for Format-Volume and Resize-Partition stayed busy, so it was not run"; !strings.Contains(err.Error(), want) {
		t.Fatalf("err = %q, want %q", err, want)
	}
	close(g.release)
	// The first call ended (late, but well): its answer stands.
	if err := <-done; err != nil {
		t.Fatalf("first call: %v", err)
	}
	// The second call never reached the host, and a later one does.
	if _, err := Script(context.Background(), b, "Resize-Partition", "third"); err != nil {
		t.Fatal(err)
	}
	if got := <-g.started; got != "third" {
		t.Fatalf("started %q after first, want only third", got)
	}
	if len(g.started) != 0 {
		t.Fatalf("%d more started", len(g.started))
	}
}

func TestBoundedZeroLimitsDoNotBound(t *testing.T) {
	out, err := Script(context.Background(), Bound(answer("ok"), "system", limits.Limits{}), "Get-Service", "x")
	if err != nil || string(out) != "ok" {
		t.Fatalf("%q, %v", out, err)
	}
}

// TestExecReturnsWhenAChildHoldsThePipes runs a shell whose child outlives
// it with the shell's standard output: killing the shell at the deadline
// leaves the pipe open, and Run still returns after WaitDelay.
func TestExecReturnsWhenAChildHoldsThePipes(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("uses sh")
	}
	if _, err := exec.LookPath("sh"); err != nil {
		t.Skip("no sh")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	start := time.Now()
	out, err := Exec{WaitDelay: 500 * time.Millisecond}.Run(ctx, Command{Program: "sh", Args: []string{"-c", "trap '' TERM INT; sleep 30 & echo $!; sleep 30"}})
	took := time.Since(start)
	if pid, perr := strconv.Atoi(strings.TrimSpace(string(out))); perr == nil {
		if p, ferr := os.FindProcess(pid); ferr == nil {
			_ = p.Kill()
		}
	}
	if took > 800*time.Millisecond+slack {
		t.Fatalf("Run returned after %v", took)
	}
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err = %v, want context.DeadlineExceeded", err)
	}
}

// TestBoundedExecEndsAHungProcess is the whole path: a real process that
// does not end, through Script and Bound.
func TestBoundedExecEndsAHungProcess(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("uses sh")
	}
	if _, err := exec.LookPath("sh"); err != nil {
		t.Skip("no sh")
	}
	b := Bound(Exec{WaitDelay: 500 * time.Millisecond}, "smb", limits.Limits{Timeout: 300 * time.Millisecond, Concurrency: 8, Setting: "--host-call-timeout-smb"})
	start := time.Now()
	_, err := b.Run(context.Background(), Command{Program: "sh", Args: []string{"-c", "exec sleep 30"}, Op: "Get-SmbGlobalMapping"})
	if took := time.Since(start); took > 800*time.Millisecond+slack {
		t.Fatalf("returned after %v", took)
	}
	if want := "smb Get-SmbGlobalMapping did not finish within 300ms (host operation deadline; --host-call-timeout-smb)"; err == nil || err.Error() != want {
		t.Fatalf("err = %v, want %q", err, want)
	}
}

// A Win32 call that never returns (a hung UNC path, say) answers at its
// deadline; it keeps its slot until it returns, so the next call waits for
// that slot and is refused at its own deadline, never hung.
func TestBoundedDoAnswersAHungCallAtItsDeadline(t *testing.T) {
	b := Bound(nil, "smb", limits.Limits{Timeout: 150 * time.Millisecond, Concurrency: 1, Setting: "--host-call-timeout-smb"})
	unblock := make(chan struct{})
	returned := make(chan struct{})
	start := time.Now()
	err := b.Do(context.Background(), "GetFileAttributes", func(context.Context) error {
		defer close(returned)
		<-unblock // ignores its context, as a blocking syscall does
		return nil
	})
	if took := time.Since(start); took > 150*time.Millisecond+slack {
		t.Fatalf("returned after %v", took)
	}
	if want := "smb GetFileAttributes did not finish within 150ms (host operation deadline; --host-call-timeout-smb)"; err == nil || err.Error() != want {
		t.Fatalf("err = %v, want %q", err, want)
	}
	err = b.Do(context.Background(), "GetFileAttributes", func(context.Context) error { return nil })
	var de *limits.DeadlineError
	if !errors.As(err, &de) || !de.Queued {
		t.Fatalf("second call while the first still hangs: %v, want a queued limits.DeadlineError", err)
	}
	close(unblock)
	<-returned
	deadline := time.Now().Add(slack)
	for {
		err = b.Do(context.Background(), "GetFileAttributes", func(context.Context) error { return errors.New("access denied") })
		if err == nil || err.Error() == "access denied" || time.Now().After(deadline) {
			break
		}
	}
	if err == nil || err.Error() != "access denied" {
		t.Fatalf("after the hung call returned: %v, want the call's own error", err)
	}
	if err := limits.Call(context.Background(), nil, "x", func(context.Context) error { return nil }); err != nil {
		t.Fatalf("Call with no limiter: %v", err)
	}
}
