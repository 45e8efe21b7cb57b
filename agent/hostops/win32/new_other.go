//go:build !windows

package win32

import "runtime"

// New returns the host's Sys: here, on an OS other than Windows, one that
// refuses every call.
func New() Sys { return Unsupported{GOOS: runtime.GOOS} }
