package inflight

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"google.golang.org/grpc/status"

	"github.com/pipeguard/pipeguard/agent/apierr"
)

func codeOf(err error) string { return apierr.Code(err).String() }

const (
	runningMsg   = `volume ResizeVolume of ` + volA + ` is refused: FormatVolume of this volume started 14:03:07 UTC is still running, retry later`
	unsettledMsg = `volume FormatVolume of ` + volA + ` is refused: FormatVolume of this volume started 14:03:07 UTC is still running (its deadline passed; the storage provider may still be working), retry later`
)

// A second operation on a volume is refused while the first runs, whatever
// the case of the id; another volume is not held up; the key is free again
// once the first is done.
func TestBeginRefusesWhileRunning(t *testing.T) {
	tab := newTestTable(t)
	tok := mustBegin(t, tab.Table, Volume(volA), "FormatVolume")
	refused(t, tab.Table, Volume(volA), "ResizeVolume", runningMsg)
	refused(t, tab.Table, Volume(strings.ToUpper(volA)), "ResizeVolume",
		strings.Replace(runningMsg, volA, strings.ToUpper(volA), 1))
	mustBegin(t, tab.Table, Volume(volB), "FormatVolume").Done()
	if n := testutil.ToFloat64(tab.metrics.refused.WithLabelValues("volume", "ResizeVolume")); n != 2 {
		t.Fatalf("refused ResizeVolume counted %v times, want 2", n)
	}
	tok.Done()
	mustBegin(t, tab.Table, Volume(volA), "ResizeVolume").Done()
	// The refusal carries its code as a gRPC status too.
	if s, ok := status.FromError(&BusyError{}); !ok || s.Code().String() != "Aborted" {
		t.Fatalf("BusyError status = %v, %v; want Aborted", s, ok)
	}
}

// An operation past its deadline holds its volume while the settle check
// says the provider is not done: each next request runs the check and is
// refused; once it says done, the next request runs.
func TestAbandonedHeldUntilCheckSaysDone(t *testing.T) {
	tab := newTestTable(t)
	a := newAnswers()
	mustBegin(t, tab.Table, Volume(volA), "FormatVolume").End(context.DeadlineExceeded, a.check)
	mustBegin(t, tab.Table, Volume(volB), "FormatVolume").Done() // never blocked
	a.answer <- false
	refused(t, tab.Table, Volume(volA), "FormatVolume", unsettledMsg)
	a.answer <- true
	tok := mustBegin(t, tab.Table, Volume(volA), "FormatVolume")
	if len(a.calls) != 2 {
		t.Fatalf("%d checks ran, want 2", len(a.calls))
	}
	refused(t, tab.Table, Volume(volA), "FormatVolume", strings.Replace(unsettledMsg, " (its deadline passed; the storage provider may still be working)", "", 1))
	tok.Done()
}

// A check that fails, panics or does not answer keeps the key held, and
// the refusal says so.
func TestCheckFailureKeepsKeyHeld(t *testing.T) {
	prefix := `volume FormatVolume of ` + volA + ` is refused: FormatVolume of this volume started 14:03:07 UTC is still running (its deadline passed; `
	for name, c := range map[string]struct {
		check Check
		want  string
	}{
		"fails":  {func(context.Context) (bool, error) { return true, errors.New("Get-Volume: no such volume") }, prefix + `checking whether the storage provider is done failed: Get-Volume: no such volume), retry later`},
		"panics": {func(context.Context) (bool, error) { panic("boom") }, prefix + `checking whether the storage provider is done failed: the check failed: boom), retry later`},
	} {
		t.Run(name, func(t *testing.T) {
			tab := newTestTable(t)
			mustBegin(t, tab.Table, Volume(volA), "FormatVolume").Abandon(c.check)
			refused(t, tab.Table, Volume(volA), "FormatVolume", c.want)
			refused(t, tab.Table, Volume(volA), "FormatVolume", c.want)
		})
	}
}

// A settle check that hangs is cut at its own deadline: the request is
// refused, later requests are refused without a second check while it
// hangs, and once it returns the next request checks again.
func TestHangingCheckIsCutAtItsDeadline(t *testing.T) {
	tab := newTestTable(t)
	tab.checkTimeout = time.Millisecond // a deadline waited on, never a sleep
	returned := make(chan struct{}, 10)
	tab.checkReturned = func() { returned <- struct{}{} }
	hang, calls := make(chan struct{}), 0
	check := func(context.Context) (bool, error) { calls++; <-hang; return true, nil }
	mustBegin(t, tab.Table, Volume(volA), "FormatVolume").Abandon(check)
	want := `volume FormatVolume of ` + volA + ` is refused: FormatVolume of this volume started 14:03:07 UTC is still running (its deadline passed; checking whether the storage provider is done did not answer within 1ms), retry later`
	refused(t, tab.Table, Volume(volA), "FormatVolume", want)
	refused(t, tab.Table, Volume(volA), "FormatVolume", want)
	close(hang)
	<-returned
	if calls != 1 {
		t.Fatalf("%d checks ran while the first hung, want 1", calls)
	}
	tab.checkTimeout = SettleCheckTimeout
	mustBegin(t, tab.Table, Volume(volA), "FormatVolume").Done()
	<-returned
	if calls != 2 {
		t.Fatalf("%d checks ran, want 2", calls)
	}
}

// A request that ends while the check runs is told so, and the check's
// verdict is not taken for it.
func TestRequestEndsDuringCheck(t *testing.T) {
	tab := newTestTable(t)
	a := newAnswers()
	returned := make(chan struct{}, 10)
	tab.checkReturned = func() { returned <- struct{}{} }
	mustBegin(t, tab.Table, Volume(volA), "FormatVolume").Abandon(a.check)
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() { _, err := tab.Begin(ctx, Volume(volA), "FormatVolume"); errc <- err }()
	<-a.calls
	cancel()
	err := <-errc
	want := `volume FormatVolume of ` + volA + ` did not start: the request ended while the agent checked whether the earlier FormatVolume of this volume is done: context canceled`
	if err == nil || err.Error() != want || !errors.Is(err, context.Canceled) {
		t.Fatalf("Begin = %v, want %q", err, want)
	}
	a.answer <- true // the orphaned check returns; its verdict is not taken
	<-returned
	a.answer <- true
	mustBegin(t, tab.Table, Volume(volA), "FormatVolume").Done()
}

// An operation without a settle check holds its key for SettleTime after
// its deadline.
func TestTimedSettle(t *testing.T) {
	tab := newTestTable(t)
	mustBegin(t, tab.Table, Volume(volA), "ResizeVolume").End(fmt.Errorf("wrapped: %w", context.DeadlineExceeded), nil)
	tab.clock.add(SettleTime - 1)
	refused(t, tab.Table, Volume(volA), "FormatVolume", `volume FormatVolume of `+volA+` is refused: ResizeVolume of this volume started 14:03:07 UTC is still running (its deadline passed; the storage provider may still be working), retry later`)
	tab.clock.add(1)
	mustBegin(t, tab.Table, Volume(volA), "FormatVolume").Done()
}

// Whatever the checks say, MaxHold after the deadline the key is released,
// with an error log and a count: by the next request, or by the timer when
// none comes.
func TestMaxHoldReleases(t *testing.T) {
	for _, by := range []string{"request", "timer"} {
		t.Run(by, func(t *testing.T) {
			tab := newTestTable(t)
			never := func(context.Context) (bool, error) { return false, nil }
			mustBegin(t, tab.Table, Volume(volA), "FormatVolume").Abandon(never)
			tab.clock.add(MaxHold - 1)
			tab.fireTimers() // early: the key stays held
			refused(t, tab.Table, Volume(volA), "FormatVolume", unsettledMsg)
			tab.clock.add(1)
			if by == "timer" {
				tab.fireTimers()
			}
			if n := testutil.ToFloat64(tab.metrics.released.WithLabelValues("volume", "FormatVolume")); by == "timer" && n != 1 {
				t.Fatalf("released %v times by the timer, want 1", n)
			}
			mustBegin(t, tab.Table, Volume(volA), "FormatVolume").Done()
			if n := testutil.ToFloat64(tab.metrics.released.WithLabelValues("volume", "FormatVolume")); n != 1 {
				t.Fatalf("released %v times, want 1", n)
			}
			lines := tab.logs.all()
			if len(lines) != 1 || !strings.Contains(lines[0], `"msg"="released a volume whose storage operation passed its deadline and was never seen done; the storage provider may still be working on it"`) ||
				!strings.Contains(lines[0], `"operation"="FormatVolume"`) || !strings.Contains(lines[0], `"error"=null`) {
				t.Fatalf("logged %q, want one error naming the release", lines)
			}
		})
	}
}

// Ends: a host call that returned (even failed, or never started) frees the
// key; one cut by a deadline or its caller holds it; Done after Abandon
// releases it (a blocked Win32 call returned); ends after the first are
// no-ops and never free another operation's key.
func TestTokenEnds(t *testing.T) {
	tab := newTestTable(t)
	never := func(context.Context) (bool, error) { return false, nil }
	tok := mustBegin(t, tab.Table, Volume(volA), "FormatVolume")
	tok.Abandon(never)
	tok.Done()
	next := mustBegin(t, tab.Table, Volume(volA), "FormatVolume")
	tok.Done()
	tok.Abandon(never)
	refused(t, tab.Table, Volume(volA), "ResizeVolume", runningMsg)
	next.Done()
	next.Abandon(never)
	mustBegin(t, tab.Table, Volume(volA), "FormatVolume").Done()
}

// While one request checks whether the provider is done, another is
// refused at once, saying so, and runs no check of its own.
func TestRefusedWhileAnotherRequestChecks(t *testing.T) {
	tab := newTestTable(t)
	a := newAnswers()
	mustBegin(t, tab.Table, Volume(volA), "FormatVolume").Abandon(a.check)
	got := make(chan error, 1)
	go func() {
		tok, err := tab.Begin(context.Background(), Volume(volA), "FormatVolume")
		if err == nil {
			tok.Done()
		}
		got <- err
	}()
	<-a.calls
	refused(t, tab.Table, Volume(volA), "ResizeVolume", `volume ResizeVolume of `+volA+` is refused: FormatVolume of this volume started 14:03:07 UTC is still running (its deadline passed; the agent is checking whether the storage provider is done), retry later`)
	a.answer <- true
	if err := <-got; err != nil {
		t.Fatalf("the checking request: %v", err)
	}
	if len(a.calls) != 0 {
		t.Fatalf("%d more checks ran", len(a.calls))
	}
}

// Do holds the key for its call; a call that panics leaves the key held as
// one past its deadline (what it started may go on), and the panic goes on
// to the caller.
func TestDo(t *testing.T) {
	tab := newTestTable(t)
	inside := errors.New("Format-Volume failed: access denied")
	err := tab.Do(context.Background(), Volume(volA), "FormatVolume", nil, func() error {
		refused(t, tab.Table, Volume(volA), "ResizeVolume", runningMsg)
		return inside
	})
	if err != inside {
		t.Fatalf("Do = %v, want the call's error", err)
	}
	mustBegin(t, tab.Table, Volume(volA), "FormatVolume").Done() // the call returned: free
	func() {
		defer func() {
			if p := recover(); p != "boom" {
				t.Fatalf("recovered %v, want the call's panic", p)
			}
		}()
		_ = tab.Do(context.Background(), Volume(volA), "FormatVolume", nil, func() error { panic("boom") })
	}()
	refused(t, tab.Table, Volume(volA), "FormatVolume", unsettledMsg)
}

// MaxHold releases a key even while its settle check hangs; the hung
// check's late return leaves the operation that took the key alone.
func TestMaxHoldReleasesPastAHungCheck(t *testing.T) {
	tab := newTestTable(t)
	tab.checkTimeout = time.Millisecond
	returned := make(chan struct{}, 10)
	tab.checkReturned = func() { returned <- struct{}{} }
	hang := make(chan struct{})
	mustBegin(t, tab.Table, Volume(volA), "FormatVolume").Abandon(func(context.Context) (bool, error) { <-hang; return true, nil })
	if _, err := tab.Begin(context.Background(), Volume(volA), "FormatVolume"); err == nil {
		t.Fatal("Begin ran while the check hung")
	}
	tab.clock.add(MaxHold)
	tok := mustBegin(t, tab.Table, Volume(volA), "ResizeVolume")
	close(hang)
	<-returned
	refused(t, tab.Table, Volume(volA), "FormatVolume", `volume FormatVolume of `+volA+` is refused: ResizeVolume of this volume started 14:18:07 UTC is still running, retry later`)
	tok.Done()
}
