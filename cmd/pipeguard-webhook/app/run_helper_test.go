package app

import (
	"context"
	"testing"
)

// RunForTest builds an App from opts and runs it until the test ends, when
// it is stopped and must stop cleanly. It returns the App and the context
// it runs in, which ends with the test. The integration tests of this
// package and of app_test start the webhook through it.
func RunForTest(t testing.TB, opts Options) (*App, context.Context) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	a, err := New(ctx, opts)
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- a.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("webhook stopped with %v", err)
		}
	})
	return a, ctx
}
