package policy

import (
	"math"
	"runtime/debug"
	"runtime/metrics"
	"time"
)

// heapCheckInterval is how often the heap is read while admin rules run.
// A small rule ends long before the first reading (it takes well under a
// millisecond), so only rules that run long are watched, and they cost one
// reading per interval.
const heapCheckInterval = 10 * time.Millisecond

// heapObjects is the runtime metric the heap guard reads: the bytes of the
// heap's objects, live or not yet swept. Near the memory limit the
// collector runs often, so there it is close to what is live.
const heapObjects = "/memory/classes/heap/objects:bytes"

// heapGuard stops admin rules that run long while the heap nears the
// process's memory limit. OPA has no bound of its own on an evaluation's
// memory; a rule that builds large values (a comprehension over
// numbers.range(1, 1e8)) grows the heap by hundreds of megabytes before
// its deadline, and a few of them at once would get the webhook killed
// for its memory, which every review it serves would pay for.
type heapGuard struct {
	// limit is the process's memory limit; bound, three quarters of it,
	// is what the heap may hold while admin rules run long. Zero: no
	// guard.
	limit, bound int64
}

// newHeapGuard guards limit: the Go runtime's memory limit (GOMEMLIMIT)
// when zero, none when negative or when the runtime has none.
func newHeapGuard(limit int64) heapGuard {
	if limit == 0 {
		limit = debug.SetMemoryLimit(-1)
	}
	if limit <= 0 || limit == math.MaxInt64 {
		return heapGuard{}
	}
	return heapGuard{limit: limit, bound: limit / 4 * 3}
}

func (g heapGuard) on() bool { return g.bound > 0 }

// exceeded returns the heap's size when it is over the bound.
func (g heapGuard) exceeded() (int64, bool) {
	s := []metrics.Sample{{Name: heapObjects}}
	metrics.Read(s)
	if s[0].Value.Kind() != metrics.KindUint64 {
		return 0, false
	}
	heap := int64(s[0].Value.Uint64())
	return heap, heap > g.bound
}

// wake is how long to wait, at most, before looking at the evaluation
// again: until deadline, or until the next heap reading when guarded.
func (g heapGuard) wake(deadline time.Time) time.Duration {
	d := time.Until(deadline)
	if g.on() && d > heapCheckInterval {
		return heapCheckInterval
	}
	return d
}
