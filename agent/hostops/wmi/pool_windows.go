//go:build windows

package wmi

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"sync"

	ole "github.com/go-ole/go-ole"
)

// job is one call run on a worker.
type job struct {
	ctx  context.Context
	run  func(ctx context.Context) error
	done chan error // buffered: a worker never waits for the caller
}

// pool is the process's workers: OS threads in COM's multithreaded
// apartment, started with the first call and kept for the process's life
// (COM's process-wide state is the process's too).
var pool struct {
	once sync.Once
	jobs chan job
}

// security is the process's one CoInitializeSecurity.
var security struct {
	once sync.Once
	hr   uint32
}

func startPool() {
	pool.jobs = make(chan job)
	for range Workers {
		go worker()
	}
}

// worker runs jobs on one locked OS thread in the multithreaded
// apartment. Its thread is never unlocked: it ends with the process.
func worker() {
	runtime.LockOSThread()
	var initErr error
	if err := ole.CoInitializeEx(0, ole.COINIT_MULTITHREADED); err != nil {
		var oe *ole.OleError
		if !errors.As(err, &oe) || uint32(oe.Code()) != sFalse {
			initErr = fmt.Errorf("WMI: initialising COM on a worker thread: %w", err)
		}
	}
	if initErr == nil {
		security.once.Do(func() { security.hr = initSecurity() })
		if security.hr != 0 {
			initErr = &Error{Op: "COM security setup", HRESULT: security.hr}
		}
	}
	for j := range pool.jobs {
		if initErr != nil {
			j.done <- initErr
			continue
		}
		if err := j.ctx.Err(); err != nil {
			j.done <- err
			continue
		}
		j.done <- j.run(j.ctx)
	}
}

// do runs f on a worker and returns its error, or ctx's error as soon as
// ctx ends: while f waits for a worker, or while it runs. f itself looks
// at ctx between its waits on WMI, so that its worker is freed soon
// after; where WMI gives no way to wait in steps, the worker stays with
// the call until the provider answers, and the caller has already
// returned.
func do(ctx context.Context, f func(ctx context.Context) error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	pool.once.Do(startPool)
	j := job{ctx: ctx, run: f, done: make(chan error, 1)}
	select {
	case pool.jobs <- j:
	case <-ctx.Done():
		return ctx.Err()
	}
	select {
	case err := <-j.done:
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}
