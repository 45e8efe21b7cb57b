package limits

import (
	"context"
	"sync"

	"github.com/pipeguard/pipeguard/agent/confine"
)

// CallerKey names who a host call is for, so that slots and workers are
// shared between callers: the key confine.ShareKey gives the request, the
// pod UID of a caller attributed to a pod, else its user (the verified
// token's username, the peer's SID or UID), so that a process cannot get a
// share of its own by starting another. A call with no caller on its
// context, one the agent makes itself and not a request of the API (whose
// connections always carry one), has the key "" and no per-caller cap.
func CallerKey(ctx context.Context) string { return confine.ShareKey(ctx) }

// Exhausted says what a slot request found full when it gave up.
type Exhausted int

const (
	// ExhaustedAll: every slot was busy.
	ExhaustedAll Exhausted = iota + 1
	// ExhaustedCaller: the caller held its whole share.
	ExhaustedCaller
	// ExhaustedClass: the calls of the request's class (the groups other
	// than disk and volume, for the workers) held theirs.
	ExhaustedClass
)

// Slots are size slots shared between callers: one caller holds at
// most callerShare of them, and the requests of a capped class at most
// classShare, so that the rest stays for the others. Waiting requests are
// served in order, skipping those whose own share is full: a caller at its
// cap never holds up another caller.
type Slots struct {
	size, callerShare, classShare int

	mu       sync.Mutex
	busy     int
	byCaller map[string]int
	class    int // busy slots of the capped class
	waiting  []*slotWaiter
}

type slotWaiter struct {
	caller  string
	capped  bool
	granted bool
	ready   chan struct{}
}

// NewSlots returns size slots; callerShare or classShare of 0 or more
// than size means size.
func NewSlots(size, callerShare, classShare int) *Slots {
	if callerShare <= 0 || callerShare > size {
		callerShare = size
	}
	if classShare <= 0 || classShare > size {
		classShare = size
	}
	return &Slots{size: size, callerShare: callerShare, classShare: classShare, byCaller: map[string]int{}}
}

// callerShareOf is how many of size slots one caller may hold: all but a
// quarter of them (at least one is kept for the others when size > 1).
func callerShareOf(size int) int {
	if size <= 1 {
		return size
	}
	return size - max(1, size/4)
}

// admits reports why w cannot have a slot now, or 0.
func (f *Slots) admits(w *slotWaiter) Exhausted {
	switch {
	case w.caller != "" && f.byCaller[w.caller] >= f.callerShare:
		return ExhaustedCaller
	case w.capped && f.class >= f.classShare:
		return ExhaustedClass
	case f.busy >= f.size:
		return ExhaustedAll
	}
	return 0
}

// grantLocked gives free slots to the waiting requests, in order.
func (f *Slots) grantLocked() {
	kept := f.waiting[:0]
	for _, w := range f.waiting {
		if f.admits(w) == 0 {
			f.take(w)
			close(w.ready)
			continue
		}
		kept = append(kept, w)
	}
	clear(f.waiting[len(kept):])
	f.waiting = kept
}

func (f *Slots) take(w *slotWaiter) {
	w.granted = true
	f.busy++
	f.byCaller[w.caller]++
	if w.capped {
		f.class++
	}
}

// Acquire waits, within ctx, for a slot for caller (of the capped class
// when capped). It answers the release of the slot, or, when ctx ended
// first, nil and what was full then (0 when nothing was: the request
// ended as a slot came free). A request whose context has already ended never
// gets a slot.
func (f *Slots) Acquire(ctx context.Context, caller string, capped bool) (func(), Exhausted) {
	w := &slotWaiter{caller: caller, capped: capped, ready: make(chan struct{})}
	f.mu.Lock()
	if ctx.Err() != nil {
		why := f.admits(w)
		f.mu.Unlock()
		return nil, why
	}
	f.waiting = append(f.waiting, w)
	f.grantLocked()
	f.mu.Unlock()
	select {
	case <-w.ready:
	case <-ctx.Done():
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if ctx.Err() != nil {
		if w.granted {
			f.releaseLocked(w)
		} else {
			for i, o := range f.waiting {
				if o == w {
					f.waiting = append(f.waiting[:i], f.waiting[i+1:]...)
					break
				}
			}
		}
		return nil, f.admits(w)
	}
	var once sync.Once
	return func() {
		once.Do(func() {
			f.mu.Lock()
			defer f.mu.Unlock()
			f.releaseLocked(w)
		})
	}, 0
}

// Waiting is how many requests wait for a slot.
func (f *Slots) Waiting() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.waiting)
}

func (f *Slots) releaseLocked(w *slotWaiter) {
	w.granted = false
	f.busy--
	if f.byCaller[w.caller]--; f.byCaller[w.caller] <= 0 {
		delete(f.byCaller, w.caller)
	}
	if w.capped {
		f.class--
	}
	f.grantLocked()
}
