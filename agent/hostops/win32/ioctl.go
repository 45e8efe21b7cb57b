package win32

import (
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"unicode/utf16"
)

// The I/O control codes the host operations send. Each is
// CTL_CODE(DeviceType, Function, Method, Access) of winioctl.h, that is
// DeviceType<<16 | Access<<14 | Function<<2 | Method, with METHOD_BUFFERED
// (0) and FILE_ANY_ACCESS (0) or FILE_READ_ACCESS (1).
const (
	// IOCTL_VOLUME_GET_VOLUME_DISK_EXTENTS is
	// CTL_CODE(IOCTL_VOLUME_BASE ('V', 0x56), 0, METHOD_BUFFERED, FILE_ANY_ACCESS).
	// It answers a VOLUME_DISK_EXTENTS.
	IOCTL_VOLUME_GET_VOLUME_DISK_EXTENTS uint32 = 0x00560000
	// IOCTL_STORAGE_GET_DEVICE_NUMBER is
	// CTL_CODE(IOCTL_STORAGE_BASE (0x2d), 0x0420, METHOD_BUFFERED, FILE_ANY_ACCESS).
	// It answers a STORAGE_DEVICE_NUMBER.
	IOCTL_STORAGE_GET_DEVICE_NUMBER uint32 = 0x002d1080
	// IOCTL_STORAGE_QUERY_PROPERTY is
	// CTL_CODE(IOCTL_STORAGE_BASE (0x2d), 0x0500, METHOD_BUFFERED, FILE_ANY_ACCESS).
	// It takes a STORAGE_PROPERTY_QUERY (StoragePropertyQuery) and answers
	// the descriptor of the property asked for.
	IOCTL_STORAGE_QUERY_PROPERTY uint32 = 0x002d1400
	// IOCTL_SCSI_GET_ADDRESS is
	// CTL_CODE(IOCTL_SCSI_BASE (FILE_DEVICE_CONTROLLER, 0x04), 0x0406, METHOD_BUFFERED, FILE_ANY_ACCESS).
	// It answers a SCSI_ADDRESS.
	IOCTL_SCSI_GET_ADDRESS uint32 = 0x00041018
	// IOCTL_DISK_GET_LENGTH_INFO is
	// CTL_CODE(IOCTL_DISK_BASE (FILE_DEVICE_DISK, 0x07), 0x0017, METHOD_BUFFERED, FILE_READ_ACCESS).
	// It answers a GET_LENGTH_INFORMATION; the device must be opened for
	// reading.
	IOCTL_DISK_GET_LENGTH_INFO uint32 = 0x0007405c
	// FSCTL_GET_REPARSE_POINT is
	// CTL_CODE(FILE_DEVICE_FILE_SYSTEM (0x09), 42, METHOD_BUFFERED, FILE_ANY_ACCESS).
	// It answers a REPARSE_DATA_BUFFER.
	FSCTL_GET_REPARSE_POINT uint32 = 0x000900a8
)

// The Access field of a CTL_CODE: the rights the handle must have.
const (
	FILE_ANY_ACCESS   = 0
	FILE_READ_ACCESS  = 1
	FILE_WRITE_ACCESS = 2
)

// RequiredAccess returns the Access field of an I/O control code:
// FILE_ANY_ACCESS, FILE_READ_ACCESS, FILE_WRITE_ACCESS or both.
func RequiredAccess(code uint32) uint32 { return code >> 14 & 3 }

var ioctlNames = map[uint32]string{
	IOCTL_VOLUME_GET_VOLUME_DISK_EXTENTS: "IOCTL_VOLUME_GET_VOLUME_DISK_EXTENTS",
	IOCTL_STORAGE_GET_DEVICE_NUMBER:      "IOCTL_STORAGE_GET_DEVICE_NUMBER",
	IOCTL_STORAGE_QUERY_PROPERTY:         "IOCTL_STORAGE_QUERY_PROPERTY",
	IOCTL_SCSI_GET_ADDRESS:               "IOCTL_SCSI_GET_ADDRESS",
	IOCTL_DISK_GET_LENGTH_INFO:           "IOCTL_DISK_GET_LENGTH_INFO",
	FSCTL_GET_REPARSE_POINT:              "FSCTL_GET_REPARSE_POINT",
}

// IOCTLName returns the name of an I/O control code, or its value in hex
// for one not listed here.
func IOCTLName(code uint32) string {
	if n, ok := ioctlNames[code]; ok {
		return n
	}
	return fmt.Sprintf("0x%08X", code)
}

// DeviceIoControlFunc is how a DeviceIoControl call is named in errors and
// to a limits.Limiter: "DeviceIoControl(IOCTL_SCSI_GET_ADDRESS)".
func DeviceIoControlFunc(code uint32) string {
	return "DeviceIoControl(" + IOCTLName(code) + ")"
}

// volumeNameRe is a volume GUID path, its trailing backslash optional.
var volumeNameRe = regexp.MustCompile(`^\\\\\?\\Volume\{[0-9A-Fa-f]{8}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{12}\}\\?$`)

// IsVolumeName reports whether s is a volume GUID path,
// \\?\Volume{xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx}, with or without its
// trailing backslash.
func IsVolumeName(s string) bool { return volumeNameRe.MatchString(s) }

// VolumeRoot returns volume, a volume GUID path, with its trailing
// backslash: the form the volume management functions take.
func VolumeRoot(volume string) string {
	if strings.HasSuffix(volume, `\`) {
		return volume
	}
	return volume + `\`
}

// VolumeDevice returns volume, a volume GUID path, without its trailing
// backslash: the name CreateFileW opens the volume's device by (with the
// backslash it opens the root directory).
func VolumeDevice(volume string) string { return strings.TrimSuffix(volume, `\`) }

// PhysicalDrive returns the device path of disk n, \\.\PhysicalDriveN.
func PhysicalDrive(n uint32) string {
	return `\\.\PhysicalDrive` + strconv.FormatUint(uint64(n), 10)
}

// ParsePhysicalDrives returns the numbers N of the names of the form
// PhysicalDriveN (any case, N decimal without leading zeros, at most
// 4294967295) among names, the MS-DOS device names QueryDosDeviceW lists,
// in increasing order and each once. Other names are left out.
func ParsePhysicalDrives(names []string) []uint32 {
	const prefix = "physicaldrive"
	seen := map[uint32]bool{}
	var out []uint32
	for _, name := range names {
		if len(name) <= len(prefix) || !strings.EqualFold(name[:len(prefix)], prefix) {
			continue
		}
		digits := name[len(prefix):]
		if len(digits) > 1 && digits[0] == '0' || strings.ContainsFunc(digits, func(r rune) bool { return r < '0' || r > '9' }) {
			continue
		}
		n, err := strconv.ParseUint(digits, 10, 32)
		if err != nil || seen[uint32(n)] {
			continue
		}
		seen[uint32(n)] = true
		out = append(out, uint32(n))
	}
	slices.Sort(out)
	return out
}

// SplitMultiString splits a REG_MULTI_SZ-style list, strings each ended by
// a NUL and the list by an empty one, as QueryDosDeviceW returns it. A
// last string without its NUL is kept.
func SplitMultiString(buf []uint16) []string {
	var out []string
	start := 0
	for i, c := range buf {
		if c != 0 {
			continue
		}
		if i == start {
			break
		}
		out = append(out, string(utf16.Decode(buf[start:i])))
		start = i + 1
	}
	if start < len(buf) && !slices.Contains(buf[start:], 0) {
		out = append(out, string(utf16.Decode(buf[start:])))
	}
	return out
}
