package win32

import (
	"errors"
	"fmt"
	"unsafe"

	"golang.org/x/sys/windows"
)

// procGetSystemFirmwareTable is kernel32's GetSystemFirmwareTable, which
// golang.org/x/sys/windows does not wrap.
var procGetSystemFirmwareTable = windows.NewLazySystemDLL("kernel32.dll").NewProc("GetSystemFirmwareTable")

// firmwareTableProviderRSMB is the 'RSMB' provider signature, the raw SMBIOS
// firmware table provider, as the C multi-character constant 'RSMB'.
const firmwareTableProviderRSMB = 'R'<<24 | 'S'<<16 | 'M'<<8 | 'B'

// maxRawSMBIOSData bounds the buffer GetSystemFirmwareTable may ask for. An
// SMBIOS 2 table is at most 64 KiB; SMBIOS 3 lifts the limit, but no
// firmware comes near this one.
const maxRawSMBIOSData = 16 << 20

// NewFirmware returns the host's Firmware, which calls
// GetSystemFirmwareTable.
func NewFirmware() Firmware { return hostFirmware{} }

type hostFirmware struct{}

// RawSMBIOSData returns the RawSMBIOSData of
// GetSystemFirmwareTable('RSMB', 0, ...). The first call asks for the size;
// should the table grow between calls, the call is repeated with the size
// it then asks for.
func (hostFirmware) RawSMBIOSData() ([]byte, error) {
	if err := procGetSystemFirmwareTable.Find(); err != nil {
		return nil, fmt.Errorf("GetSystemFirmwareTable is not in kernel32.dll: %w", err)
	}
	n, _, errno := procGetSystemFirmwareTable.Call(firmwareTableProviderRSMB, 0, 0, 0)
	for range 3 {
		if n == 0 {
			return nil, fmt.Errorf("GetSystemFirmwareTable('RSMB', 0): %w", firmwareError(errno))
		}
		if n > maxRawSMBIOSData {
			return nil, fmt.Errorf("GetSystemFirmwareTable('RSMB', 0) asks for %d bytes, more than the %d an SMBIOS table may take here", n, maxRawSMBIOSData)
		}
		buf := make([]byte, n)
		got, _, errno := procGetSystemFirmwareTable.Call(firmwareTableProviderRSMB, 0, uintptr(unsafe.Pointer(&buf[0])), n)
		if got == 0 {
			return nil, fmt.Errorf("GetSystemFirmwareTable('RSMB', 0) with %d bytes: %w", n, firmwareError(errno))
		}
		if got <= n {
			return buf[:got], nil
		}
		n = got // it grew: the answer is the size now needed
	}
	return nil, errors.New("GetSystemFirmwareTable('RSMB', 0): the table kept growing between calls")
}

// firmwareError is the error of a failed call, which sets the last error.
func firmwareError(errno error) error {
	if errno == nil || errors.Is(errno, windows.ERROR_SUCCESS) {
		return errors.New("it failed without saying why")
	}
	return errno
}
