//go:build !windows

package runner

import (
	"errors"
	"syscall"
	"testing"
)

// processAlive reports whether the process exists (a zombie not yet reaped
// counts as alive).
func processAlive(pid int) bool {
	return !errors.Is(syscall.Kill(pid, 0), syscall.ESRCH)
}

// killProcess kills the process from outside the pool.
func killProcess(t *testing.T, pid int) {
	t.Helper()
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
}
