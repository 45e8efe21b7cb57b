package inflight

import (
	"context"
	"errors"

	"github.com/pipeguard/pipeguard/agent/hostops/limits"
)

// Token is a key held by an operation. Its methods may be called from any
// goroutine, more than once; the first end counts, except that Done after
// Abandon still releases the key (the host call really returned).
type Token struct {
	t *Table
	e *entry
}

// Done releases the key: the operation returned, so the storage provider
// is done with it. A Win32 call blocked in Windows past its deadline calls
// Done when Windows returns it.
func (k *Token) Done() {
	t := k.t
	t.mu.Lock()
	defer t.mu.Unlock()
	k.e.ended = true
	if t.m[k.e.key.id] == k.e {
		delete(t.m, k.e.key.id)
	}
}

// Abandon keeps the key held after the operation's caller was answered
// while the storage provider may still be working (its deadline passed, or
// its caller went away): until check says done, or for SettleTime when
// check is nil, and MaxHold at most.
func (k *Token) Abandon(check Check) {
	t := k.t
	t.mu.Lock()
	defer t.mu.Unlock()
	if k.e.ended || !k.e.expired.IsZero() || t.m[k.e.key.id] != k.e {
		return
	}
	k.e.expired, k.e.check = t.now(), check
	t.expireAt(k.e)
}

// End ends the operation by err, its host call's answer: Done when the
// call returned (answered, failed, or never started), else Abandon(check).
func (k *Token) End(err error, check Check) {
	if Returned(err) {
		k.Done()
		return
	}
	k.Abandon(check)
}

// Returned reports whether err, a host call's answer, means the call
// returned, so that nothing it started goes on: no error, an error of its
// own, or a call that never started (no slot within its deadline). A deadline or cancellation otherwise means the storage
// provider may still be working.
func Returned(err error) bool {
	if err == nil {
		return true
	}
	var de *limits.DeadlineError
	if errors.As(err, &de) && de.Queued {
		return true
	}
	return !errors.Is(err, context.DeadlineExceeded) && !errors.Is(err, context.Canceled)
}
