package inflight

import (
	"context"
	"fmt"
)

// settle runs e's check, run, for op within SettleCheckTimeout and ctx. It
// answers done, or why not with the check's error, or the request's end
// when ctx ended first. A check that does not return by its deadline keeps
// e.run set until it does: never two checks at once for one key.
func (t *Table) settle(ctx context.Context, op string, e *entry, run *checkRun) (done bool, why Why, checkErr, ended error) {
	cctx, cancel := context.WithTimeout(ctx, t.checkTimeout)
	defer cancel()
	type result struct {
		done bool
		err  error
	}
	res := make(chan result, 1)
	go func() {
		var r result
		defer func() {
			if p := recover(); p != nil {
				r = result{err: fmt.Errorf("the check failed: %v", p)}
			}
			t.mu.Lock()
			run.returned = true
			if run.orphaned && e.run == run {
				e.run = nil
			}
			hook := t.checkReturned
			t.mu.Unlock()
			if hook != nil {
				hook()
			}
			res <- r
		}()
		r.done, r.err = e.check(cctx)
	}()
	var r result
	select {
	case r = <-res:
	case <-cctx.Done():
		t.mu.Lock()
		if run.returned {
			e.run = nil
		} else {
			run.orphaned = true
		}
		t.mu.Unlock()
		if ctx.Err() != nil {
			return false, 0, nil, t.endedWhileChecking(ctx, op, e)
		}
		return false, CheckTimedOut, nil, nil
	}
	t.mu.Lock()
	e.run = nil
	t.mu.Unlock()
	switch {
	case r.err != nil && ctx.Err() != nil:
		return false, 0, nil, t.endedWhileChecking(ctx, op, e)
	case r.err != nil:
		return false, CheckFailed, r.err, nil
	case !r.done:
		return false, Unsettled, nil, nil
	}
	return true, 0, nil, nil
}

// endedWhileChecking is the error of a request for op that ended while
// the settle check of e ran.
func (t *Table) endedWhileChecking(ctx context.Context, op string, e *entry) error {
	return fmt.Errorf("%s %s of %s did not start: the request ended while the agent checked whether the earlier %s of this %s is done: %w",
		t.group, op, e.key.Name, e.op, e.key.Kind, ctx.Err())
}
