package inflight

import "context"

// Do runs call, op on key, holding key: refused with a *BusyError while
// another operation on key runs or may still run. When call ends by its
// deadline or its caller going away (see Returned), or panics, key stays
// held until check says done (nil: for SettleTime), MaxHold at most.
func (t *Table) Do(ctx context.Context, key Key, op string, check Check, call func() error) error {
	tok, err := t.Begin(ctx, key, op)
	if err != nil {
		return err
	}
	ended := false
	defer func() {
		if !ended {
			tok.Abandon(check) // call panicked: what it started may go on
		}
	}()
	err = call()
	ended = true
	tok.End(err, check)
	return err
}
