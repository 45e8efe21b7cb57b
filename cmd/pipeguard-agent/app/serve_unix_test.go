//go:build !windows

package app

import (
	"context"
	"fmt"
	"testing"

	"github.com/pipeguard/pipeguard/agent/server"
)

// TestWrappedErrorsNameFlags checks that a package's message keeps naming
// the flag however deeply the agent wraps it.
func TestWrappedErrorsNameFlags(t *testing.T) {
	_, err := server.Listen(context.Background(), server.ListenOptions{}, "disk", "v1")
	if err == nil || err.Error() != "no socket dir: set ListenOptions.SocketDir" {
		t.Fatalf("Listen without a socket dir: %v", err)
	}
	if got := (flagError{err}).Error(); got != "no socket dir: set --socket-dir" {
		t.Errorf("flagError = %q", got)
	}
	wrapped := fmt.Errorf("cannot listen: %w", fmt.Errorf("disk v1: %w", err))
	if got, want := (flagError{wrapped}).Error(), "cannot listen: disk v1: no socket dir: set --socket-dir"; got != want {
		t.Errorf("flagError = %q, want %q", got, want)
	}
}
