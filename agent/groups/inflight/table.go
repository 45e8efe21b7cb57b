package inflight

import (
	"context"
	"sync"
	"time"

	"github.com/go-logr/logr"
)

// The bounds of a key held after its operation's deadline.
const (
	// SettleCheckTimeout is the deadline of one settle check.
	SettleCheckTimeout = 10 * time.Second
	// SettleTime is how long a key stays held after the deadline of an
	// operation that has no settle check.
	SettleTime = 2 * time.Minute
	// MaxHold is how long a key stays held after its operation's deadline
	// at most, whatever the settle checks say.
	MaxHold = 15 * time.Minute
)

// Check is an operation's settle check: it reports whether the storage
// provider is done with the operation (its post-condition holds).
type Check func(ctx context.Context) (done bool, err error)

// Table holds the operation in progress of each key of one API group. The
// zero Table is not usable; New makes one.
type Table struct {
	group   string
	metrics *Metrics
	log     logr.Logger

	mu sync.Mutex
	m  map[string]*entry

	// The clock and the bounds; tests change them.
	now          func() time.Time
	afterFunc    func(time.Duration, func()) *time.Timer
	checkTimeout time.Duration
	settleTime   time.Duration
	maxHold      time.Duration
	// checkReturned, when set, is called after each settle check returns.
	checkReturned func()
}

// entry is the operation holding a key.
type entry struct {
	key     Key
	op      string
	started time.Time
	ended   bool      // its token's Done was called
	expired time.Time // deadline passed or caller gone; zero while running
	check   Check     // nil: held for SettleTime
	run     *checkRun // the settle check running, if any
}

// checkRun is one settle check; its fields are guarded by Table.mu.
type checkRun struct {
	returned bool // the check returned
	orphaned bool // its requester stopped waiting for it
}

// New returns the table of group (say "volume"), counting into m (nil: not
// counted) and logging its releases at MaxHold to log.
func New(group string, m *Metrics, log logr.Logger) *Table {
	return &Table{group: group, metrics: m, log: log, m: map[string]*entry{},
		now: time.Now, afterFunc: time.AfterFunc,
		checkTimeout: SettleCheckTimeout, settleTime: SettleTime, maxHold: MaxHold}
}

// Begin takes key for op, the request's method, or refuses with a
// *BusyError naming the operation that holds it. When that operation ended
// by its deadline and has a settle check, Begin runs the check first, within
// SettleCheckTimeout and ctx, and takes the key if the check says done.
// The caller ends the returned Token when its operation ends.
func (t *Table) Begin(ctx context.Context, key Key, op string) (*Token, error) {
	t.mu.Lock()
	for {
		e := t.m[key.id]
		if e != nil && !e.expired.IsZero() && t.now().Sub(e.expired) >= t.maxHold {
			t.releaseLocked(e)
			e = nil
		}
		switch {
		case e == nil:
			return t.startLocked(key, op), nil
		case e.expired.IsZero():
			return nil, t.refuseLocked(key, op, e, Running, nil)
		case e.run != nil && e.run.orphaned:
			return nil, t.refuseLocked(key, op, e, CheckTimedOut, nil)
		case e.run != nil:
			return nil, t.refuseLocked(key, op, e, Checking, nil)
		case e.check == nil && t.now().Sub(e.expired) >= t.settleTime:
			delete(t.m, key.id)
			continue
		case e.check == nil:
			return nil, t.refuseLocked(key, op, e, Unsettled, nil)
		}
		run := &checkRun{}
		e.run = run
		t.mu.Unlock()
		done, why, checkErr, ended := t.settle(ctx, op, e, run)
		if ended != nil {
			return nil, ended
		}
		t.mu.Lock()
		if t.m[key.id] != e {
			continue // released meanwhile: look again
		}
		if !done {
			return nil, t.refuseLocked(key, op, e, why, checkErr)
		}
		delete(t.m, key.id)
	}
}

// startLocked takes key for op and unlocks t.
func (t *Table) startLocked(key Key, op string) *Token {
	e := &entry{key: key, op: op, started: t.now()}
	t.m[key.id] = e
	t.mu.Unlock()
	return &Token{t: t, e: e}
}

// refuseLocked counts and returns the refusal of op on key, which e holds,
// and unlocks t.
func (t *Table) refuseLocked(key Key, op string, e *entry, why Why, err error) error {
	started := e.started
	t.mu.Unlock()
	t.metrics.refuse(t.group, op)
	return &BusyError{Group: t.group, Op: op, Key: key, Holder: e.op, Started: started, Why: why, CheckErr: err, CheckTimeout: t.checkTimeout}
}

// releaseLocked releases e's key at MaxHold, with an error log and a count.
func (t *Table) releaseLocked(e *entry) {
	if t.m[e.key.id] != e {
		return
	}
	delete(t.m, e.key.id)
	t.metrics.release(t.group, e.op)
	t.log.Error(nil, "released a "+e.key.Kind+" whose storage operation passed its deadline and was never seen done; the storage provider may still be working on it",
		"group", t.group, e.key.Kind, e.key.Name, "operation", e.op, "started", e.started.UTC(), "deadlinePassed", e.expired.UTC(), "heldFor", t.maxHold)
}

// expireAt releases e at MaxHold after its deadline if nothing did before,
// so that the key is released, logged and counted even when no request
// for it comes.
func (t *Table) expireAt(e *entry) {
	t.afterFunc(t.maxHold, func() {
		t.mu.Lock()
		defer t.mu.Unlock()
		if !e.expired.IsZero() && t.now().Sub(e.expired) >= t.maxHold {
			t.releaseLocked(e)
		}
	})
}
