package win32_test

import (
	"reflect"
	"testing"

	"github.com/pipeguard/pipeguard/agent/hostops/win32"
)

// ctlCode is CTL_CODE of winioctl.h.
func ctlCode(deviceType, function, method, access uint32) uint32 {
	return deviceType<<16 | access<<14 | function<<2 | method
}

func TestIOCTLCodesAreTheirCTLCode(t *testing.T) {
	const methodBuffered = 0
	cases := map[string]struct {
		got, want uint32
		access    uint32
	}{
		"IOCTL_VOLUME_GET_VOLUME_DISK_EXTENTS": {win32.IOCTL_VOLUME_GET_VOLUME_DISK_EXTENTS, ctlCode('V', 0, methodBuffered, win32.FILE_ANY_ACCESS), win32.FILE_ANY_ACCESS},
		"IOCTL_STORAGE_GET_DEVICE_NUMBER":      {win32.IOCTL_STORAGE_GET_DEVICE_NUMBER, ctlCode(0x2d, 0x0420, methodBuffered, win32.FILE_ANY_ACCESS), win32.FILE_ANY_ACCESS},
		"IOCTL_STORAGE_QUERY_PROPERTY":         {win32.IOCTL_STORAGE_QUERY_PROPERTY, ctlCode(0x2d, 0x0500, methodBuffered, win32.FILE_ANY_ACCESS), win32.FILE_ANY_ACCESS},
		"IOCTL_SCSI_GET_ADDRESS":               {win32.IOCTL_SCSI_GET_ADDRESS, ctlCode(0x04, 0x0406, methodBuffered, win32.FILE_ANY_ACCESS), win32.FILE_ANY_ACCESS},
		"IOCTL_DISK_GET_LENGTH_INFO":           {win32.IOCTL_DISK_GET_LENGTH_INFO, ctlCode(0x07, 0x0017, methodBuffered, win32.FILE_READ_ACCESS), win32.FILE_READ_ACCESS},
		"FSCTL_GET_REPARSE_POINT":              {win32.FSCTL_GET_REPARSE_POINT, ctlCode(0x09, 42, methodBuffered, win32.FILE_ANY_ACCESS), win32.FILE_ANY_ACCESS},
	}
	for name, tc := range cases {
		if tc.got != tc.want {
			t.Errorf("%s = 0x%08X, CTL_CODE gives 0x%08X", name, tc.got, tc.want)
		}
		if got := win32.IOCTLName(tc.got); got != name {
			t.Errorf("IOCTLName(0x%08X) = %q, want %q", tc.got, got, name)
		}
		if got := win32.RequiredAccess(tc.got); got != tc.access {
			t.Errorf("RequiredAccess(%s) = %d, want %d", name, got, tc.access)
		}
	}
	if got := win32.DeviceIoControlFunc(0x1234); got != "DeviceIoControl(0x00001234)" {
		t.Errorf("an unknown code is named %q", got)
	}
}

func TestVolumePaths(t *testing.T) {
	const id = `\\?\Volume{452e318a-5cde-421e-9831-b9853c521012}\`
	for _, v := range []string{id, id[:len(id)-1]} {
		if !win32.IsVolumeName(v) {
			t.Errorf("IsVolumeName(%q) = false", v)
		}
		if got := win32.VolumeRoot(v); got != id {
			t.Errorf("VolumeRoot(%q) = %q", v, got)
		}
		if got := win32.VolumeDevice(v); got != id[:len(id)-1] {
			t.Errorf("VolumeDevice(%q) = %q", v, got)
		}
	}
	for _, v := range []string{
		"", `C:\`, `\\?\Volume{452e318a-5cde-421e-9831-b9853c521012}\\`, `\\?\Volume{452e318a-5cde-421e-9831-b9853c52101}\`,
		`\\.\Volume{452e318a-5cde-421e-9831-b9853c521012}\`, `\\?\Volume{452e318a-5cde-421e-9831-b9853c521012}\x`,
		`\\?\Volume{452e318a-5cde-421e-9831-b9853c521012}` + "\n", `\\?\GLOBALROOT\Device\HarddiskVolume1`,
	} {
		if win32.IsVolumeName(v) {
			t.Errorf("IsVolumeName(%q) = true", v)
		}
	}
	if got := win32.PhysicalDrive(12); got != `\\.\PhysicalDrive12` {
		t.Errorf("PhysicalDrive(12) = %q", got)
	}
}

func TestParsePhysicalDrives(t *testing.T) {
	names := []string{"C:", "PhysicalDrive3", "PHYSICALDRIVE0", "physicaldrive10", "PhysicalDrive", "PhysicalDrive01",
		"PhysicalDrive4294967296", "PhysicalDrive4294967295", "PhysicalDrive-1", "PhysicalDrive1x", "PhysicalDrive+2",
		"PhysicalDrive3", "CdRom0", "PhysicalDrive ٣", "Harddisk0Partition1"}
	want := []uint32{0, 3, 10, 4294967295}
	if got := win32.ParsePhysicalDrives(names); !reflect.DeepEqual(got, want) {
		t.Fatalf("ParsePhysicalDrives = %v, want %v", got, want)
	}
}

func TestSplitMultiString(t *testing.T) {
	u := func(s string) []uint16 {
		var out []uint16
		for _, r := range s {
			if r == '|' {
				r = 0
			}
			out = append(out, uint16(r))
		}
		return out
	}
	cases := map[string]struct {
		in   []uint16
		want []string
	}{
		"list":                {u("C:|PhysicalDrive0|NUL||"), []string{"C:", "PhysicalDrive0", "NUL"}},
		"stops at the empty":  {u("a||b|"), []string{"a"}},
		"last without NUL":    {u("a|b"), []string{"a", "b"}},
		"empty":               {nil, nil},
		"only the terminator": {u("|"), nil},
	}
	for name, tc := range cases {
		if got := win32.SplitMultiString(tc.in); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s: %q, want %q", name, got, tc.want)
		}
	}
}
