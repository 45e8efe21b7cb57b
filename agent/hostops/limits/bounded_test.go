package limits

import (
	"context"
	"errors"
	"testing"
	"time"
)

// A call past its own deadline is a *DeadlineError naming the group, the
// operation and what sets the deadline; one queued behind a full pool past
// it never starts.
func TestWithinAndDoAnswerAtTheDeadline(t *testing.T) {
	b := Bound("disk", Limits{Timeout: 100 * time.Millisecond, Concurrency: 1, Setting: "--host-call-timeout-disk"})
	release := make(chan struct{})
	defer close(release)
	done := make(chan error, 1)
	go func() {
		done <- b.Do(context.Background(), "DeviceIoControl", func(context.Context) error { <-release; return nil })
	}()
	err := <-done
	var de *DeadlineError
	if !errors.As(err, &de) || de.Queued || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("hung call: %v, want a DeadlineError of a call that ran", err)
	}
	if want := "disk DeviceIoControl did not finish within 100ms (host operation deadline; --host-call-timeout-disk)"; err.Error() != want {
		t.Fatalf("hung call: %q\nwant %q", err, want)
	}
	// The hung call keeps its slot: the next one waits, and never starts.
	ran := false
	err = b.Within(context.Background(), "QueryDosDeviceW", func(context.Context) error { ran = true; return nil })
	if !errors.As(err, &de) || !de.Queued || ran {
		t.Fatalf("queued call: %v (ran %v), want a DeadlineError of a call that never started", err, ran)
	}
	if b.Group() != "disk" || b.Waiting("QueryDosDeviceW") != 0 {
		t.Fatalf("group %q, %d waiting", b.Group(), b.Waiting("QueryDosDeviceW"))
	}
}

// With no Limiter, Call runs fn as it is.
func TestCallWithoutLimiter(t *testing.T) {
	want := errors.New("x")
	if err := Call(context.Background(), nil, "op", func(context.Context) error { return want }); err != want {
		t.Fatalf("Call: %v, want %v", err, want)
	}
}
