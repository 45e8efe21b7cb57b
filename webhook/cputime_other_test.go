//go:build !unix

package webhook_test

// processCPU is not measured on this platform.
func processCPU() int64 { return 0 }
