//go:build !windows

package win32

import (
	"fmt"
	"runtime"
)

// NewFirmware returns the host's Firmware: here, on an OS other than
// Windows, one that refuses every read.
func NewFirmware() Firmware { return noFirmware{} }

type noFirmware struct{}

// RawSMBIOSData fails: it needs Windows.
func (noFirmware) RawSMBIOSData() ([]byte, error) {
	return nil, fmt.Errorf("cannot call GetSystemFirmwareTable on %s: this host operation needs Windows", runtime.GOOS)
}
