package main

import (
	"runtime"
	"time"

	"golang.org/x/sys/unix"
)

// pacer waits for the due times of an open-loop run. The Go runtime's
// timers wake an otherwise idle process on whole milliseconds, which would
// make every request up to a millisecond late at rates near 1,000/s and
// add the load generator's lateness to every latency measured from the due
// time. The pacer sleeps in nanosleep(2) on an OS thread of its own
// instead, which wakes within tens of microseconds.
type pacer struct{}

func newPacer() pacer {
	runtime.LockOSThread()
	return pacer{}
}

// until returns once t has passed.
func (pacer) until(t time.Time) {
	for {
		wait := time.Until(t)
		if wait <= 0 {
			return
		}
		ts := unix.NsecToTimespec(int64(wait))
		_ = unix.Nanosleep(&ts, nil) // EINTR: the loop sleeps for the rest
	}
}

func (pacer) stop() { runtime.UnlockOSThread() }
