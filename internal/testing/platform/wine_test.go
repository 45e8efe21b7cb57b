package platform

import (
	"os"
	"runtime"
	"testing"
)

// TestUnderWine: off Windows never; under Wine, where test/wine runs this
// package's Windows build with PIPEGUARD_UNDER_WINE=1, always.
func TestUnderWine(t *testing.T) {
	want := runtime.GOOS == "windows" && os.Getenv("PIPEGUARD_UNDER_WINE") == "1"
	if runtime.GOOS == "windows" && os.Getenv("PIPEGUARD_UNDER_WINE") == "" {
		t.Skip("on Windows without PIPEGUARD_UNDER_WINE the platform is not known to the test")
	}
	if got := UnderWine(); got != want {
		t.Fatalf("UnderWine() = %v, want %v", got, want)
	}
}
