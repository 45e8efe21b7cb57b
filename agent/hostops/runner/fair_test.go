package runner

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"google.golang.org/grpc/peer"

	"github.com/pipeguard/pipeguard/agent/identity"

	"github.com/pipeguard/pipeguard/agent/hostops/limits"
)

// podCtx is a request context of a caller in pod uid, as the guard's
// credentials attach it.
func podCtx(parent context.Context, uid string) context.Context {
	return peer.NewContext(parent, &peer.Peer{AuthInfo: identity.AuthInfo{Caller: &identity.Caller{PodUID: uid, UID: -1, GID: -1}}})
}

func TestCallerKey(t *testing.T) {
	if k := limits.CallerKey(context.Background()); k != "" {
		t.Errorf("no caller: key %q, want none", k)
	}
	if k := limits.CallerKey(podCtx(context.Background(), "u1")); k != "pod:u1" {
		t.Errorf("pod caller: key %q", k)
	}
	// Two processes of one host user share one key: starting another
	// process gets no share of its own.
	host := func(pid int) context.Context {
		return peer.NewContext(context.Background(), &peer.Peer{AuthInfo: identity.AuthInfo{Caller: &identity.Caller{PID: pid, UID: 1000, GID: -1, PodMapped: true}}})
	}
	if a, b := limits.CallerKey(host(10)), limits.CallerKey(host(11)); a != b || a != "host:pipeguard:peer:uid:1000" {
		t.Errorf("host processes: keys %q and %q, want one", a, b)
	}
}

func TestBoundedOneCallerCannotTakeEverySlot(t *testing.T) {
	g := newGate()
	b := Bound(g, "iscsi", limits.Limits{Timeout: time.Hour, Concurrency: 8, Setting: "--host-call-timeout-iscsi"})
	hostile := podCtx(context.Background(), "hostile")
	var wg sync.WaitGroup
	for range 7 {
		wg.Go(func() { _, _ = Script(hostile, b, "Connect-IscsiTarget", "hang") })
	}
	for range 6 {
		<-g.started
	}
	waitFor(t, "the hostile caller's seventh call to wait", func() bool {
		return b.Waiting("Connect-IscsiTarget") == 1
	})
	// Two slots are free, and the hostile caller's seventh call does not
	// get one: another caller's call starts at once.
	other := make(chan struct{})
	go func() {
		_, _ = Script(podCtx(context.Background(), "driver"), b, "Get-IscsiTarget", "driver")
		close(other)
	}()
	if s := <-g.started; s != "driver" {
		t.Fatalf("started %q, want the other caller's call", s)
	}
	if n := g.running.Load(); n != 7 {
		t.Fatalf("%d running, want the hostile caller's 6 and the other caller's", n)
	}
	close(g.release)
	<-other
	wg.Wait()
}

func TestBoundedCallerShareNamedAtTheDeadline(t *testing.T) {
	g := newGate()
	defer close(g.release)
	b := Bound(g, "volume", limits.Limits{Timeout: time.Hour, Concurrency: 8},
		limits.Class{Ops: formatOps, Limits: limits.Limits{Timeout: 100 * time.Millisecond, Concurrency: 2, Setting: "--host-call-timeout-volume, --format-concurrency"}})
	hostile := podCtx(context.Background(), "hostile")
	go func() { _, _ = Script(hostile, b, "Format-Volume", "hold") }()
	<-g.started
	_, err := Script(hostile, b, "Resize-Partition", "second")
	want := "volume Resize-Partition did not start within 100ms: this caller already held 1 of the 2 slots for Format-Volume and Resize-Partition, its whole share, so it was not run (host operation deadline and per-caller share; --host-call-timeout-volume, --format-concurrency)"
	var de *limits.DeadlineError
	if !errors.As(err, &de) || err.Error() != want {
		t.Fatalf("err = %v\nwant %q", err, want)
	}
}

// The attack: hung iSCSI calls from one pod, and a driver formatting four
// volumes. The iSCSI group holds one of the two workers at most; every
// format is served.
func TestWorkersHungISCSICallsLeaveAWorkerForFormat(t *testing.T) {
	f := newFakePool(t, 2)
	hostileCtx, stop := context.WithCancel(podCtx(context.Background(), "hostile"))
	iscsi := Bound(f, "iscsi", limits.Limits{Timeout: time.Hour, Concurrency: 8, Setting: "--host-call-timeout-iscsi"})
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() { _, _ = Script(hostileCtx, iscsi, "Connect-IscsiTarget", "hang") })
	}
	waitFor(t, "a hung iSCSI call to run", func() bool { return len(f.entries(t, "run")) == 1 })
	// A second pod's iSCSI call is held back too: the workers kept for
	// disk and volume are not the iSCSI group's, whoever asks.
	ctx, cancel := context.WithTimeout(podCtx(context.Background(), "other"), 100*time.Millisecond)
	_, err := Script(ctx, iscsi, "Connect-IscsiTarget", "answer:x")
	cancel()
	want := "Connect-IscsiTarget failed: no PowerShell worker became free for Connect-IscsiTarget before the request ended: the iscsi group, with the others but disk and volume, already had 1 of the 2 workers, the rest being kept for disk and volume (--powershell-workers): context deadline exceeded"
	if err == nil || err.Error() != want {
		t.Fatalf("err = %v\nwant %q", err, want)
	}
	vol := Bound(f, "volume", limits.Limits{Timeout: 10 * time.Second, Concurrency: 8, Setting: "--host-call-timeout-volume"},
		limits.Class{Ops: formatOps, Limits: limits.Limits{Timeout: 10 * time.Second, Concurrency: 2, Setting: "--host-call-timeout-volume, --format-concurrency"}})
	driver := podCtx(context.Background(), "driver")
	var formats sync.WaitGroup
	errs := make(chan error, 4)
	for range 4 {
		formats.Go(func() {
			out, err := Script(driver, vol, "Format-Volume", "answer:formatted")
			if err == nil && string(out) != "formatted" {
				err = errors.New("answered " + string(out))
			}
			errs <- err
		})
	}
	formats.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Errorf("a driver's format: %v", err)
		}
	}
	if n := len(f.entries(t, "run")); n != 5 {
		t.Errorf("%d runs, want 1 hung iSCSI call and 4 formats", n)
	}
	stop()
	wg.Wait()
}

// The attack: requests cancelled as soon as they reach a worker, each
// killing it. After the first, the caller waits for the backoff, and every
// request it cancels meanwhile never starts a worker.
func TestWorkersCancelStormBacksOff(t *testing.T) {
	waiting := make(chan struct{}, 1)
	f := newFakePool(t, 2, func(o *WorkerOptions) { o.KillBackoff = time.Hour })
	f.testBackoffWait = func() { waiting <- struct{}{} }
	hostile := podCtx(context.Background(), "hostile")
	ctx, cancel := context.WithCancel(hostile)
	first := make(chan error, 1)
	go func() { _, err := f.run(ctx, "Connect-IscsiTarget", "hang"); first <- err }()
	waitFor(t, "the first request to reach a worker", func() bool { return len(f.entries(t, "run")) == 1 })
	cancel()
	if err := <-first; !errors.Is(err, context.Canceled) {
		t.Fatalf("first: %v", err)
	}
	const storm = 20
	for i := range storm {
		ctx, cancel := context.WithCancel(hostile)
		done := make(chan error, 1)
		go func() { _, err := f.run(ctx, "Connect-IscsiTarget", "hang"); done <- err }()
		<-waiting
		cancel()
		err := <-done
		want := "Connect-IscsiTarget was not run: this caller's last 1 requests to the PowerShell workers ended before their answer, each killing its worker, so its next request waits 1h0m0s first (PowerShell worker restart backoff, up to 1h0m0s), and the request ended before that: context canceled"
		if err == nil || !strings.HasPrefix(err.Error(), "Connect-IscsiTarget was not run: this caller's last 1 requests") || !strings.Contains(err.Error(), "(PowerShell worker restart backoff, up to 1h0m0s), and the request ended before that: context canceled") {
			t.Fatalf("storm request %d: %v\nwant like %q", i, err, want)
		}
	}
	if got := int(testutil.ToFloat64(f.metrics.backoffs)); got != storm {
		t.Errorf("%d requests backed off, want %d", got, storm)
	}
	if f.starts() != 1 || f.restarts(restartDeadline) != 1 {
		t.Errorf("%d starts, %d deadline restarts; want 1 each: the storm must not restart workers", f.starts(), f.restarts(restartDeadline))
	}
	// Another caller is not held back by the hostile caller's backoff.
	out, err := f.run(podCtx(context.Background(), "driver"), "Format-Volume", "answer:ok")
	if err != nil || string(out) != "ok" {
		t.Fatalf("the driver: %q, %v", out, err)
	}
}

func TestWorkersEndedRequestNeverStartsAWorker(t *testing.T) {
	f := newFakePool(t, 2)
	ctx, cancel := context.WithCancel(podCtx(context.Background(), "p"))
	cancel()
	if _, err := f.run(ctx, "Format-Volume", "answer:x"); !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
	if f.starts() != 0 {
		t.Fatalf("%d workers started for a request whose context had ended", f.starts())
	}
}

func TestKillBackoffDoublesUpToItsBoundAndForgets(t *testing.T) {
	b := newKillBackoff(time.Second, 5*time.Second)
	now := time.Unix(1000, 0)
	for i, want := range []time.Duration{time.Second, 2 * time.Second, 4 * time.Second, 5 * time.Second, 5 * time.Second} {
		b.record("c", true, now)
		if d, n := b.wait("c", now); d != want || n != i+1 {
			t.Fatalf("after %d kills: wait %v (%d), want %v", i+1, d, n, want)
		}
	}
	b.record("c", false, now)
	if d, _ := b.wait("c", now); d != 0 {
		t.Fatalf("after an answer: wait %v, want none", d)
	}
	for i := range MaxKillBackoffCallers + 10 {
		b.record(string(rune(i+1)), true, now.Add(time.Duration(i)))
	}
	if len(b.callers) > MaxKillBackoffCallers {
		t.Fatalf("%d callers kept, want at most %d", len(b.callers), MaxKillBackoffCallers)
	}
}

// A request cut by the agent's own deadline (a group's, for a whole smb
// request) is not counted against its caller: only ends the caller chose
// back off.
func TestWorkersOwnDeadlineDoesNotBackOff(t *testing.T) {
	f := newFakePool(t, 2, func(o *WorkerOptions) { o.KillBackoff = time.Hour })
	caller := podCtx(context.Background(), "driver")
	ctx, cancel := context.WithTimeoutCause(caller, 100*time.Millisecond, limits.ErrHostCallDeadline)
	defer cancel()
	if _, err := f.run(ctx, "New-SmbGlobalMapping", "hang"); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err = %v", err)
	}
	out, err := f.run(caller, "New-SmbGlobalMapping", "answer:ok")
	if err != nil || string(out) != "ok" {
		t.Fatalf("the next request: %q, %v", out, err)
	}
	if n := int(testutil.ToFloat64(f.metrics.backoffs)); n != 0 || f.restarts(restartDeadline) != 1 {
		t.Fatalf("%d backoffs, %d deadline restarts; want none and 1", n, f.restarts(restartDeadline))
	}
}
