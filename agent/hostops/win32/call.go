package win32

import (
	"context"

	"github.com/pipeguard/pipeguard/agent/hostops/limits"
)

// Call runs fn, one call of a Sys named op after its Win32 function, under
// l (limits.Call: the group's deadline and concurrency cap) and returns
// fn's result. When the deadline passes before fn returns, Call answers at
// once with the zero value and the *limits.DeadlineError; fn's result,
// whenever it comes, is dropped. With no Limiter fn runs directly.
func Call[T any](ctx context.Context, l limits.Limiter, op string, fn func() (T, error)) (T, error) {
	// fn may outlive Call (a hung call keeps running on its goroutine):
	// its result travels by channel, never through a shared variable.
	res := make(chan T, 1)
	err := limits.Call(ctx, l, op, func(context.Context) error {
		v, err := fn()
		res <- v
		return err
	})
	select {
	case v := <-res:
		return v, err
	default:
		var zero T
		return zero, err
	}
}

// Do is Call for a call with no result.
func Do(ctx context.Context, l limits.Limiter, op string, fn func() error) error {
	return limits.Call(ctx, l, op, func(context.Context) error { return fn() })
}
