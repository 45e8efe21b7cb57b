// Package win32 is the seam between the native Windows host operations
// (volume.Native, disk.Native, smb.Native) and Windows itself: Sys, a few
// Win32 calls that take and return plain Go values and bytes; Services, the
// service control manager system.Native starts, stops and reads services
// with; and Firmware, the firmware tables it reads the BIOS serial number
// from.
//
// New returns the host's Sys, ConnectServices its Services and NewFirmware
// its Firmware: on Windows, calls through
// golang.org/x/sys/windows; elsewhere, ones that refuse every call. The
// answers of DeviceIoControl and FSCTL_GET_REPARSE_POINT are bytes laid out
// as Microsoft documents the structures (VOLUME_DISK_EXTENTS,
// STORAGE_DEVICE_NUMBER, SCSI_ADDRESS, GET_LENGTH_INFORMATION,
// STORAGE_DEVICE_DESCRIPTOR, REPARSE_DATA_BUFFER); the decoders here read
// them on any OS, check every count, offset and length against the bytes
// there are, and answer a *LayoutError, never a panic, for a buffer that
// does not hold the structure.
//
// Package internal/testing/win32test holds an in-memory Sys, a host of disks, volumes and
// mount points, for tests and for running the agent where Windows' storage
// stack is absent (under Wine).
package win32
