package win32_test

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"reflect"
	"strings"
	"testing"

	"github.com/pipeguard/pipeguard/agent/hostops/win32"
	"github.com/pipeguard/pipeguard/internal/testing/win32test"
)

// unhex reads hex with spaces, newlines and // comments.
func unhex(t testing.TB, s string) []byte {
	t.Helper()
	var clean strings.Builder
	for _, line := range strings.Split(s, "\n") {
		line, _, _ = strings.Cut(line, "//")
		clean.WriteString(strings.ReplaceAll(strings.TrimSpace(line), " ", ""))
	}
	b, err := hex.DecodeString(clean.String())
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func put32(b []byte, off int, v uint32) []byte {
	b = bytes.Clone(b)
	binary.LittleEndian.PutUint32(b[off:], v)
	return b
}

func put64(b []byte, off int, v uint64) []byte {
	b = bytes.Clone(b)
	binary.LittleEndian.PutUint64(b[off:], v)
	return b
}

// The encoders of win32test lay the structures out as documented: each is
// checked once against bytes written by hand, field by field.
func TestEncodersFollowTheDocumentedLayouts(t *testing.T) {
	cases := map[string]struct{ got, want []byte }{
		"VOLUME_DISK_EXTENTS": {
			win32test.VolumeDiskExtents(win32.DiskExtent{DiskNumber: 2, StartingOffset: 0x100000, ExtentLength: 0x40000000},
				win32.DiskExtent{DiskNumber: 5, StartingOffset: 0x8000000, ExtentLength: 0x1000}),
			unhex(t, `02000000 // NumberOfDiskExtents 2
				00000000 // padding before Extents
				02000000 00000000 // Extents[0].DiskNumber 2, padding
				0000100000000000 // StartingOffset 0x100000
				0000004000000000 // ExtentLength 0x40000000
				05000000 00000000 // Extents[1].DiskNumber 5, padding
				0000000800000000 // StartingOffset 0x8000000
				0010000000000000 // ExtentLength 0x1000`),
		},
		"STORAGE_DEVICE_NUMBER": {
			win32test.StorageDeviceNumber(win32.StorageDeviceNumber{DeviceType: 7, DeviceNumber: 3, PartitionNumber: 2}),
			unhex(t, `07000000 // DeviceType FILE_DEVICE_DISK
				03000000 // DeviceNumber 3
				02000000 // PartitionNumber 2`),
		},
		"SCSI_ADDRESS": {
			win32test.SCSIAddress(win32.SCSIAddress{PortNumber: 3, PathId: 0, TargetId: 1, Lun: 7}),
			unhex(t, `08000000 // Length 8
				03 // PortNumber
				00 // PathId
				01 // TargetId
				07 // Lun`),
		},
		"GET_LENGTH_INFORMATION": {
			win32test.LengthInformation(0x2_0000_0000),
			unhex(t, `0000000002000000 // Length 8 GiB`),
		},
		"STORAGE_DEVICE_DESCRIPTOR": {
			win32test.StorageDeviceDescriptor(win32.StorageDeviceDescriptor{DeviceType: 0, BusType: 1, VendorId: "Msft", SerialNumber: " 6002 "}),
			unhex(t, `01000000 // Version (the size, as the encoder writes it)
				34000000 // Size 52
				00 00 00 00 // DeviceType, DeviceTypeModifier, RemovableMedia, CommandQueueing
				28000000 // VendorIdOffset 40
				00000000 // ProductIdOffset: none
				00000000 // ProductRevisionOffset: none
				2d000000 // SerialNumberOffset 45
				01000000 // BusType BusTypeScsi
				00000000 // RawPropertiesLength
				00000000 // RawDeviceProperties[1] and padding
				4d73667400 // "Msft" NUL at 40
				2036303032 2000 // " 6002 " NUL at 45`),
		},
		"REPARSE_DATA_BUFFER mount point": {
			win32test.MountPointReparse(`\??\V{}\`, ""),
			unhex(t, `030000a0 // ReparseTag IO_REPARSE_TAG_MOUNT_POINT
				1c00 // ReparseDataLength 28: 8 bytes of fields, 20 of names
				0000 // Reserved
				0000 1000 // SubstituteNameOffset 0, SubstituteNameLength 16
				1200 0000 // PrintNameOffset 18, PrintNameLength 0
				5c003f003f005c005600 7b007d005c00 0000 // \??\V{}\ NUL
				0000 // "" NUL`),
		},
		"REPARSE_DATA_BUFFER symbolic link": {
			win32test.SymlinkReparse(`\??\C:\a`, `C:\a`, win32.SYMLINK_FLAG_RELATIVE),
			unhex(t, `0c0000a0 // ReparseTag IO_REPARSE_TAG_SYMLINK
				2800 // ReparseDataLength 40: 12 bytes of fields, 28 of names
				0000 // Reserved
				0000 1000 // SubstituteNameOffset 0, SubstituteNameLength 16
				1200 0800 // PrintNameOffset 18, PrintNameLength 8
				01000000 // Flags SYMLINK_FLAG_RELATIVE
				5c003f003f005c0043003a005c006100 0000 // \??\C:\a NUL
				43003a005c006100 0000 // C:\a NUL`),
		},
	}
	for name, tc := range cases {
		// The encoder writes Size as Version too; the fixture says so.
		if name == "STORAGE_DEVICE_DESCRIPTOR" {
			tc.want = put32(tc.want, 0, uint32(len(tc.want)))
			tc.want = put32(tc.want, 4, uint32(len(tc.want)))
		}
		if !bytes.Equal(tc.got, tc.want) {
			t.Errorf("%s:\n got %x\nwant %x", name, tc.got, tc.want)
		}
	}
}

func TestParseVolumeDiskExtents(t *testing.T) {
	two := win32test.VolumeDiskExtents(win32.DiskExtent{DiskNumber: 2, StartingOffset: 1 << 20, ExtentLength: 1 << 30},
		win32.DiskExtent{DiskNumber: 5, StartingOffset: 1 << 27, ExtentLength: 4096})
	got, err := win32.ParseVolumeDiskExtents(two)
	want := []win32.DiskExtent{{2, 1 << 20, 1 << 30}, {5, 1 << 27, 4096}}
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Fatalf("ParseVolumeDiskExtents = %v, %v; want %v", got, err, want)
	}
	if got, err := win32.ParseVolumeDiskExtents(win32test.VolumeDiskExtents()); err != nil || len(got) != 0 {
		t.Fatalf("no extents: %v, %v", got, err)
	}
	if got, err := win32.ParseVolumeDiskExtents(append(bytes.Clone(two), 0xff, 0xff)); err != nil || len(got) != 2 {
		t.Fatalf("bytes past the extents: %v, %v", got, err)
	}
	faults := map[string]struct {
		buf  []byte
		want string
	}{
		"empty":             {nil, "VOLUME_DISK_EXTENTS: NumberOfDiskExtents at offset 0: 0 bytes were returned, the field takes 4 (truncated answer)"},
		"header cut":        {two[:3], "VOLUME_DISK_EXTENTS: NumberOfDiskExtents at offset 0: 3 bytes were returned, the field takes 4 (truncated answer)"},
		"no room for one":   {two[:6], "VOLUME_DISK_EXTENTS: NumberOfDiskExtents at offset 0: 2 extents take 56 bytes, 6 were returned (truncated answer)"},
		"second cut":        {two[:55], "VOLUME_DISK_EXTENTS: NumberOfDiskExtents at offset 0: 2 extents take 56 bytes, 55 were returned (truncated answer)"},
		"count overflowing": {put32(two, 0, 0xffffffff), "VOLUME_DISK_EXTENTS: NumberOfDiskExtents at offset 0: 4294967295 extents take 103079215088 bytes, 56 were returned (truncated answer)"},
		"negative offset":   {put64(two, 8+24+8, 1<<63), "VOLUME_DISK_EXTENTS: Extents[1].StartingOffset at offset 40: -9223372036854775808 is negative"},
		"negative length":   {put64(two, 8+16, ^uint64(0)), "VOLUME_DISK_EXTENTS: Extents[0].ExtentLength at offset 24: -1 is negative"},
	}
	for name, tc := range faults {
		got, err := win32.ParseVolumeDiskExtents(tc.buf)
		if err == nil || err.Error() != tc.want || got != nil {
			t.Errorf("%s: %v, %v\nwant %q", name, got, err, tc.want)
		}
	}
}

func TestParseFixedStructures(t *testing.T) {
	num, err := win32.ParseStorageDeviceNumber(win32test.StorageDeviceNumber(win32.StorageDeviceNumber{DeviceType: 7, DeviceNumber: 3, PartitionNumber: 2}))
	if err != nil || num != (win32.StorageDeviceNumber{DeviceType: 7, DeviceNumber: 3, PartitionNumber: 2}) {
		t.Errorf("STORAGE_DEVICE_NUMBER: %+v, %v", num, err)
	}
	addr := win32test.SCSIAddress(win32.SCSIAddress{PortNumber: 3, PathId: 1, TargetId: 2, Lun: 255})
	a, err := win32.ParseSCSIAddress(addr)
	if err != nil || a != (win32.SCSIAddress{PortNumber: 3, PathId: 1, TargetId: 2, Lun: 255}) {
		t.Errorf("SCSI_ADDRESS: %+v, %v", a, err)
	}
	n, err := win32.ParseLengthInformation(win32test.LengthInformation(1 << 40))
	if err != nil || n != 1<<40 {
		t.Errorf("GET_LENGTH_INFORMATION: %d, %v", n, err)
	}
	faults := map[string]struct {
		parse func([]byte) error
		buf   []byte
		want  string
	}{
		"STORAGE_DEVICE_NUMBER cut": {func(b []byte) error { _, err := win32.ParseStorageDeviceNumber(b); return err }, make([]byte, 11),
			"STORAGE_DEVICE_NUMBER: length at offset 0: 11 bytes were returned, the structure takes 12 (truncated answer)"},
		"SCSI_ADDRESS cut": {func(b []byte) error { _, err := win32.ParseSCSIAddress(b); return err }, addr[:7],
			"SCSI_ADDRESS: length at offset 0: 7 bytes were returned, the structure takes 8 (truncated answer)"},
		"SCSI_ADDRESS Length 0": {func(b []byte) error { _, err := win32.ParseSCSIAddress(b); return err }, put32(addr, 0, 0),
			"SCSI_ADDRESS: Length at offset 0: is 0, not the 8 bytes of the structure"},
		"SCSI_ADDRESS Length huge": {func(b []byte) error { _, err := win32.ParseSCSIAddress(b); return err }, put32(addr, 0, 0xffffffff),
			"SCSI_ADDRESS: Length at offset 0: is 4294967295, not the 8 bytes of the structure"},
		"GET_LENGTH_INFORMATION cut": {func(b []byte) error { _, err := win32.ParseLengthInformation(b); return err }, []byte{1, 2, 3},
			"GET_LENGTH_INFORMATION: length at offset 0: 3 bytes were returned, the structure takes 8 (truncated answer)"},
		"GET_LENGTH_INFORMATION negative": {func(b []byte) error { _, err := win32.ParseLengthInformation(b); return err }, win32test.LengthInformation(-512),
			"GET_LENGTH_INFORMATION: Length at offset 0: -512 is negative"},
	}
	for name, tc := range faults {
		if err := tc.parse(tc.buf); err == nil || err.Error() != tc.want {
			t.Errorf("%s: %v\nwant %q", name, err, tc.want)
		}
	}
}
