//go:build !windows

package system

// readRawSMBIOSData needs Windows.
func readRawSMBIOSData() ([]byte, error) {
	return nil, needsWindows("GetSystemFirmwareTable")
}
