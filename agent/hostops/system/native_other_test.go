//go:build !windows

package system

import (
	"context"
	"runtime"
	"testing"
)

// TestNativeNeedsWindows: on other OSes, Native's own interfaces answer
// that they need Windows, in the words of the other host operations.
func TestNativeNeedsWindows(t *testing.T) {
	ctx := context.Background()
	n := Native{}
	calls := map[string]struct {
		call func() error
		want string
	}{
		"BIOSSerialNumber": {
			call: func() error { _, err := n.BIOSSerialNumber(ctx); return err },
			want: "reading the BIOS serial number: cannot call GetSystemFirmwareTable on " + runtime.GOOS + ": this host operation needs Windows",
		},
		"GetService": {
			call: func() error { _, err := n.GetService(ctx, "csiproxy"); return err },
			want: "GetService: connecting to the service control manager: cannot call the service control manager on " + runtime.GOOS + ": this host operation needs Windows",
		},
		"StartService": {
			call: func() error { return n.StartService(ctx, "csiproxy") },
			want: "StartService: connecting to the service control manager: cannot call the service control manager on " + runtime.GOOS + ": this host operation needs Windows",
		},
		"StopService": {
			call: func() error { return n.StopService(ctx, "csiproxy", true) },
			want: "StopService: connecting to the service control manager: cannot call the service control manager on " + runtime.GOOS + ": this host operation needs Windows",
		},
	}
	for name, c := range calls {
		t.Run(name, func(t *testing.T) {
			if err := c.call(); err == nil || err.Error() != c.want {
				t.Fatalf("err = %v, want %q", err, c.want)
			}
		})
	}
}
