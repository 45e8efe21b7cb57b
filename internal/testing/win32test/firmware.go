package win32test

import "github.com/pipeguard/pipeguard/agent/hostops/win32"

// Firmware is a win32.Firmware that answers with the function: its raw
// SMBIOS data and error.
type Firmware func() ([]byte, error)

var _ win32.Firmware = Firmware(nil)

// RawSMBIOSData calls f.
func (f Firmware) RawSMBIOSData() ([]byte, error) { return f() }
