//go:build !windows

package platform

// UnderWine is false off Windows.
func UnderWine() bool { return false }
