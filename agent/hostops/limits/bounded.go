package limits

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"
)

// DefaultConcurrency is how many host calls of one group run at once, the
// cap of each group's default Limits. Each group declares its own default
// limits beside its host operations (e.g. disk.Limits).
const DefaultConcurrency = 8

// Limits bound a class of host calls.
type Limits struct {
	// Timeout is the deadline of each call, counted from when it is asked
	// for (waiting for a slot included); the request's own deadline still
	// applies when it is shorter. 0 means none of its own.
	Timeout time.Duration
	// Concurrency is how many calls run at once; 0 means no cap.
	Concurrency int
	// CallerShare is how many of the Concurrency slots one caller
	// (CallerKey) holds at most; 0 means DefaultCallerShare(Concurrency).
	CallerShare int
	// Setting names what sets these limits, for the errors, e.g.
	// "--host-call-timeout-disk".
	Setting string
}

// DefaultCallerShare is how many of n slots one caller holds at most when
// Limits.CallerShare is 0: all but a quarter of them, at least one being
// kept for the other callers when n > 1 (6 of 8, 1 of 2).
func DefaultCallerShare(n int) int { return callerShareOf(n) }

// Class is a set of operations of a group with limits of their own (a slot
// pool separate from the group's).
type Class struct {
	// Ops are the operation names, as the calls give them.
	Ops    []string
	Limits Limits
}

// Bounded runs the host calls of one group under Limits: every call has a
// deadline, and at most Concurrency calls of a class run at once. A call
// that waits for a slot past its deadline never starts.
type Bounded struct {
	group   string
	pools   map[string]*pool // by op, for the classes
	general *pool
}

type pool struct {
	limits Limits
	name   string // what the slots are for, in errors
	slots  *Slots // nil: no cap
}

func newPool(name string, l Limits) *pool {
	p := &pool{limits: l, name: name}
	if l.Concurrency > 0 {
		if l.CallerShare <= 0 || l.CallerShare > l.Concurrency {
			l.CallerShare = DefaultCallerShare(l.Concurrency)
		}
		p.limits = l
		p.slots = NewSlots(l.Concurrency, l.CallerShare, 0)
	}
	return p
}

// Bound returns the limits l on every call of group (e.g. "disk"), except
// the operations of classes, which have theirs.
func Bound(group string, l Limits, classes ...Class) *Bounded {
	b := &Bounded{group: group, pools: map[string]*pool{}, general: newPool(group+" operations", l)}
	for _, c := range classes {
		p := newPool(strings.Join(c.Ops, " and "), c.Limits)
		for _, op := range c.Ops {
			b.pools[op] = p
		}
	}
	return b
}

// DeadlineError is a host call that did not finish within its deadline. It
// is a context.DeadlineExceeded (errors.Is), which the API answers with
// codes.DeadlineExceeded.
type DeadlineError struct {
	// Group and Op name the operation, e.g. "disk" and "partitioning disk".
	Group, Op string
	// Timeout is the deadline that passed, and Setting what sets it.
	Timeout time.Duration
	Setting string
	// Queued is true when the call never started: every slot stayed busy
	// until the deadline. Slots and Pool say which.
	Queued bool
	Slots  int
	Pool   string
	// CallerShare, when not 0, says the slots were not all busy: the
	// caller itself held this many of them, its whole share, until the
	// deadline.
	CallerShare int
}

func (e *DeadlineError) Error() string {
	if e.Queued && e.CallerShare > 0 {
		return fmt.Sprintf("%s %s did not start within %v: this caller already held %d of the %d slots for %s, its whole share, so it was not run (host operation deadline and per-caller share; %s)",
			e.Group, e.Op, e.Timeout, e.CallerShare, e.Slots, e.Pool, e.Setting)
	}
	if e.Queued {
		return fmt.Sprintf("%s %s did not start within %v: all %d slots for %s stayed busy, so it was not run (host operation deadline and cap; %s)",
			e.Group, e.Op, e.Timeout, e.Slots, e.Pool, e.Setting)
	}
	return fmt.Sprintf("%s %s did not finish within %v (host operation deadline; %s)", e.Group, e.Op, e.Timeout, e.Setting)
}

// Unwrap returns context.DeadlineExceeded.
func (e *DeadlineError) Unwrap() error { return context.DeadlineExceeded }

// ErrHostCallDeadline is the cause (context.Cause) of a context ended by
// the agent's own host operation deadline, not by its caller: a Bounded
// call's, or a group's for a whole request.
var ErrHostCallDeadline = errors.New("host operation deadline")

var errOwnDeadline = ErrHostCallDeadline

// Group is the group the calls are of, e.g. "disk".
func (b *Bounded) Group() string { return b.group }

// Waiting is how many calls of op wait for a slot of its pool.
func (b *Bounded) Waiting(op string) int {
	p := b.pool(op)
	if p.slots == nil {
		return 0
	}
	return p.slots.Waiting()
}

func (b *Bounded) pool(op string) *pool {
	if p := b.pools[op]; p != nil {
		return p
	}
	return b.general
}

// Within runs fn, named op, under the limits of op on the calling
// goroutine: fn gets op's deadline and a slot of its pool. When fn fails
// after that deadline passed, Within answers with a *DeadlineError.
func (b *Bounded) Within(ctx context.Context, op string, fn func(ctx context.Context) error) error {
	return b.limit(ctx, op, fn, false)
}

// Do runs fn, a host call that starts no process (a Win32 call), under the
// limits of op. fn runs on a goroutine of its own: when the deadline passes
// first, Do answers with a *DeadlineError at once, and fn's slot stays taken
// until fn returns, so calls that never return can fill the cap but never
// hold a caller past its deadline.
func (b *Bounded) Do(ctx context.Context, op string, fn func(ctx context.Context) error) error {
	return b.limit(ctx, op, fn, true)
}

// limit runs fn with a slot of op's pool and op's deadline. With detach, fn
// runs on its own goroutine and keeps its slot until it returns.
func (b *Bounded) limit(ctx context.Context, op string, fn func(context.Context) error, detach bool) error {
	p := b.pool(op)
	cctx, cancel := ctx, context.CancelFunc(func() {})
	if p.limits.Timeout > 0 {
		cctx, cancel = context.WithTimeoutCause(ctx, p.limits.Timeout, errOwnDeadline)
	}
	defer cancel()
	release := func() {}
	if p.slots != nil {
		rel, why := p.slots.Acquire(cctx, CallerKey(ctx), false)
		if rel == nil {
			return b.ended(ctx, cctx, op, p, true, why)
		}
		release = rel
	}
	if cctx.Err() != nil {
		release()
		return b.ended(ctx, cctx, op, p, true, 0)
	}
	if !detach {
		defer release()
		err := fn(cctx)
		if err != nil && cctx.Err() != nil {
			return b.ended(ctx, cctx, op, p, false, 0)
		}
		return err
	}
	done := make(chan error, 1)
	go func() {
		defer release()
		done <- fn(cctx)
	}()
	select {
	case err := <-done:
		if err != nil && cctx.Err() != nil {
			return b.ended(ctx, cctx, op, p, false, 0)
		}
		return err
	case <-cctx.Done():
		return b.ended(ctx, cctx, op, p, false, 0)
	}
}

// Limiter runs host calls that start no process under limits; *Bounded is one.
type Limiter interface {
	Do(ctx context.Context, op string, fn func(ctx context.Context) error) error
}

// Call runs fn, named op, under l; with no Limiter it runs fn directly. The
// error of fn is returned as it is, except that a call whose own deadline
// passed answers with a *DeadlineError naming op.
func Call(ctx context.Context, l Limiter, op string, fn func(ctx context.Context) error) error {
	if l == nil {
		return fn(ctx)
	}
	return l.Do(ctx, op, fn)
}

// ended is the error of a call whose context ended: its own deadline, or
// the request's deadline or cancellation.
func (b *Bounded) ended(parent, cctx context.Context, op string, p *pool, queued bool, why Exhausted) error {
	if parent.Err() == nil && context.Cause(cctx) == errOwnDeadline {
		e := &DeadlineError{Group: b.group, Op: op, Timeout: p.limits.Timeout, Setting: p.limits.Setting,
			Queued: queued, Slots: p.limits.Concurrency, Pool: p.name}
		if why == ExhaustedCaller {
			e.CallerShare = p.limits.CallerShare
		}
		return e
	}
	if queued {
		return fmt.Errorf("%s %s did not start: the request ended while it waited for a slot: %w", b.group, op, parent.Err())
	}
	return fmt.Errorf("%s %s did not finish: the request ended first: %w", b.group, op, parent.Err())
}
