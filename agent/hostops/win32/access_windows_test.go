package win32

import (
	"testing"

	"golang.org/x/sys/windows"
)

// A device is opened with exactly the rights the IOCTL's CTL_CODE asks
// for: none for the queries, read for IOCTL_DISK_GET_LENGTH_INFO.
func TestAccessForIsTheCTLCodesAccess(t *testing.T) {
	cases := map[uint32]uint32{
		IOCTL_VOLUME_GET_VOLUME_DISK_EXTENTS: 0,
		IOCTL_STORAGE_GET_DEVICE_NUMBER:      0,
		IOCTL_STORAGE_QUERY_PROPERTY:         0,
		IOCTL_SCSI_GET_ADDRESS:               0,
		FSCTL_GET_REPARSE_POINT:              0,
		IOCTL_DISK_GET_LENGTH_INFO:           windows.FILE_READ_DATA,
		0x0007c000:                           windows.FILE_READ_DATA | windows.FILE_WRITE_DATA,
		0x00078000:                           windows.FILE_WRITE_DATA,
	}
	for code, want := range cases {
		if got := accessFor(code); got != want {
			t.Errorf("accessFor(%s) = %#x, want %#x", IOCTLName(code), got, want)
		}
	}
}
