package win32

// Firmware reads the host's firmware tables; NewFirmware returns the
// host's.
type Firmware interface {
	// RawSMBIOSData returns the raw SMBIOS firmware table, the
	// RawSMBIOSData structure of GetSystemFirmwareTable('RSMB', 0, ...).
	RawSMBIOSData() ([]byte, error)
}
