package runner

import (
	"context"
	"errors"
	"testing"
)

// On Windows a worker lives in a Job object that kills the processes it
// started with it: a script's child cannot outlive a request's deadline.
func TestWorkersKillTheWorkersChildrenWithIt(t *testing.T) {
	f := newFakePool(t, 1)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := f.run(ctx, "Format-Volume", "spawn-hang")
		done <- err
	}()
	waitFor(t, "the worker to start a child", func() bool { return len(f.entries(t, "child")) == 1 })
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want the request's cancellation", err)
	}
	worker, child := f.entries(t, "start")[0].PID, int(f.entries(t, "child")[0].ID)
	waitFor(t, "the worker to end", func() bool { return !processAlive(worker) })
	waitFor(t, "the worker's child to end with it", func() bool { return !processAlive(child) })
}
