package runner

import (
	"context"
	"fmt"
	"sync"
	"time"
)

// Restart backoff of the PowerShell workers: a request that ends mid-run
// kills its worker, and the next request pays about 600 ms of CPU for a new
// one. A caller whose requests keep ending mid-run (its own deadline or
// cancellation, not the group's deadline) waits before each next one gets
// a worker.
const (
	// DefaultKillBackoff is the wait after one such request; it doubles
	// with each one in a row.
	DefaultKillBackoff = 500 * time.Millisecond
	// DefaultKillBackoffMax bounds the wait.
	DefaultKillBackoffMax = 30 * time.Second
	// MaxKillBackoffCallers bounds the callers whose backoff is kept; past
	// it the records whose wait is over are dropped, then the oldest.
	MaxKillBackoffCallers = 1024
)

// killBackoff keeps, per caller, how many of its requests in a row killed
// their worker and until when its next request waits.
type killBackoff struct {
	base, limit time.Duration

	mu      sync.Mutex
	callers map[string]*killRecord
}

type killRecord struct {
	kills int
	until time.Time
}

func newKillBackoff(base, limit time.Duration) *killBackoff {
	return &killBackoff{base: base, limit: limit, callers: map[string]*killRecord{}}
}

// wait is how long caller waits from now, and how many kills in a row it
// is for.
func (b *killBackoff) wait(caller string, now time.Time) (time.Duration, int) {
	b.mu.Lock()
	defer b.mu.Unlock()
	r := b.callers[caller]
	if r == nil || !now.Before(r.until) {
		return 0, 0
	}
	return r.until.Sub(now), r.kills
}

// record counts the end of a request of caller: killed or answered (a
// script failure is an answer). An answer clears the caller's record.
func (b *killBackoff) record(caller string, killed bool, now time.Time) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if !killed {
		delete(b.callers, caller)
		return
	}
	r := b.callers[caller]
	if r == nil {
		b.makeRoomLocked(now)
		r = &killRecord{}
		b.callers[caller] = r
	}
	r.kills++
	d := b.base
	for i := 1; i < r.kills && d < b.limit; i++ {
		d *= 2
	}
	r.until = now.Add(min(d, b.limit))
}

// makeRoomLocked keeps the records under MaxKillBackoffCallers.
func (b *killBackoff) makeRoomLocked(now time.Time) {
	if len(b.callers) < MaxKillBackoffCallers {
		return
	}
	var oldest string
	for k, r := range b.callers {
		if !now.Before(r.until) {
			delete(b.callers, k)
		} else if oldest == "" || r.until.Before(b.callers[oldest].until) {
			oldest = k
		}
	}
	if len(b.callers) >= MaxKillBackoffCallers {
		delete(b.callers, oldest)
	}
}

// waitBackoff waits, within ctx, for caller's restart backoff to pass.
func (w *Workers) waitBackoff(ctx context.Context, caller, op string) error {
	if caller == "" {
		return nil
	}
	d, kills := w.backoff.wait(caller, time.Now())
	if d <= 0 {
		return nil
	}
	w.metrics.backoffs.Inc()
	if w.testBackoffWait != nil {
		w.testBackoffWait()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("%s was not run: this caller's last %d requests to the PowerShell workers ended before their answer, each killing its worker, so its next request waits %v first (PowerShell worker restart backoff, up to %v), and the request ended before that: %w",
			op, kills, d.Round(time.Millisecond), w.opts.KillBackoffMax, ctx.Err())
	}
}
