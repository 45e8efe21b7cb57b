//go:build !unix

package decode

// processCPU is not measured on this platform.
func processCPU() int64 { return 0 }
