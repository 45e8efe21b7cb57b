package win32_test

import (
	"bytes"
	"testing"

	"github.com/pipeguard/pipeguard/agent/hostops/win32"
	"github.com/pipeguard/pipeguard/internal/testing/win32test"
)

func TestStoragePropertyQuery(t *testing.T) {
	want := unhex(t, `02000000 // PropertyId StorageDeviceIdProperty
		00000000 // QueryType PropertyStandardQuery
		00000000 // AdditionalParameters[1] and padding`)
	if got := win32.StoragePropertyQuery(win32.StorageDeviceIdProperty, win32.PropertyStandardQuery); !bytes.Equal(got, want) {
		t.Fatalf("StoragePropertyQuery = %x, want %x", got, want)
	}
}

func TestParseStorageDeviceDescriptor(t *testing.T) {
	full := win32.StorageDeviceDescriptor{DeviceType: 0, RemovableMedia: true, BusType: 0x0b,
		VendorId: "Msft    ", ProductId: "Virtual Disk    ", ProductRevision: "1.0 ", SerialNumber: "  6002248066c7a8e3  "}
	buf := win32test.StorageDeviceDescriptor(full)
	got, err := win32.ParseStorageDeviceDescriptor(append(bytes.Clone(buf), "beyond Size"...))
	full.Version, full.Size = uint32(len(buf)), uint32(len(buf))
	if err != nil || got != full {
		t.Fatalf("ParseStorageDeviceDescriptor = %+v, %v\nwant %+v", got, err, full)
	}
	none := win32test.StorageDeviceDescriptor(win32.StorageDeviceDescriptor{VendorId: "Msft"})
	if got, err := win32.ParseStorageDeviceDescriptor(none); err != nil || got.SerialNumber != "" || got.VendorId != "Msft" {
		t.Fatalf("no serial number: %+v, %v", got, err)
	}
	if got, err := win32.ParseStorageDeviceDescriptor(put32(none, 24, 0xffffffff)); err != nil || got.SerialNumber != "" {
		t.Fatalf("SerialNumberOffset 0xFFFFFFFF: %+v, %v", got, err)
	}

	serial := win32test.StorageDeviceDescriptor(win32.StorageDeviceDescriptor{SerialNumber: "SN1"}) // the serial at 40, Size 44
	faults := map[string]struct {
		buf  []byte
		want string
	}{
		"empty":            {nil, "STORAGE_DESCRIPTOR_HEADER: Size at offset 4: 0 bytes were returned, the header takes 8 (truncated answer)"},
		"header only":      {serial[:8], "STORAGE_DEVICE_DESCRIPTOR: Size at offset 4: 44 exceeds the 8 bytes returned (truncated answer)"},
		"cut in a string":  {serial[:42], "STORAGE_DEVICE_DESCRIPTOR: Size at offset 4: 44 exceeds the 42 bytes returned (truncated answer)"},
		"Size too small":   {put32(serial, 4, 35), "STORAGE_DEVICE_DESCRIPTOR: Size at offset 4: 35 is less than the 36 bytes of the fixed part"},
		"Size huge":        {put32(serial, 4, 0xffffffff), "STORAGE_DEVICE_DESCRIPTOR: Size at offset 4: 4294967295 exceeds the 44 bytes returned (truncated answer)"},
		"offset in header": {put32(serial, 24, 4), "STORAGE_DEVICE_DESCRIPTOR: SerialNumberOffset at offset 24: 4 points into the 36-byte fixed part"},
		"offset past Size": {put32(serial, 24, 44), "STORAGE_DEVICE_DESCRIPTOR: SerialNumberOffset at offset 24: 44 is past Size 44"},
		"offset overflowing": {put32(serial, 12, 0xfffffff0),
			"STORAGE_DEVICE_DESCRIPTOR: VendorIdOffset at offset 12: 4294967280 is past Size 44"},
		"no NUL within Size": {put32(serial, 4, 43), "STORAGE_DEVICE_DESCRIPTOR: SerialNumberOffset at offset 24: the string at 40 has no NUL before Size 43"},
		"not ASCII": {append(serial[:41:41], 0xc3, 0xa9, 0),
			"STORAGE_DEVICE_DESCRIPTOR: SerialNumberOffset at offset 24: the string at 40 holds byte 0xc3 at 41, which is not printable ASCII"},
		"control character": {append(serial[:41:41], '\n', 'x', 0),
			"STORAGE_DEVICE_DESCRIPTOR: SerialNumberOffset at offset 24: the string at 40 holds byte 0x0a at 41, which is not printable ASCII"},
	}
	for name, tc := range faults {
		got, err := win32.ParseStorageDeviceDescriptor(tc.buf)
		if err == nil || err.Error() != tc.want || got != (win32.StorageDeviceDescriptor{}) {
			t.Errorf("%s: %+v, %v\nwant %q", name, got, err, tc.want)
		}
	}
}

// The identity reads the bus type and the serial number only: hostile
// bytes in the other strings, or offsets of theirs that lead nowhere, do
// not matter; the serial number's own faults do.
func TestParseStorageDeviceIdentity(t *testing.T) {
	d := win32test.StorageDeviceDescriptor(win32.StorageDeviceDescriptor{BusType: win32.BusTypeVirtual,
		VendorId: "Msft\x01", ProductId: "Virtual\xffDisk", ProductRevision: "1.0\n", SerialNumber: "  6002248066c7a8e3  "})
	if _, err := win32.ParseStorageDeviceDescriptor(d); err == nil {
		t.Fatal("the full parse accepted a vendor string holding 0x01; the test proves nothing")
	}
	want := win32.StorageDeviceIdentity{BusType: win32.BusTypeVirtual, SerialNumber: "  6002248066c7a8e3  "}
	if got, err := win32.ParseStorageDeviceIdentity(d); err != nil || got != want {
		t.Fatalf("ParseStorageDeviceIdentity = %+v, %v\nwant %+v", got, err, want)
	}
	if got, err := win32.ParseStorageDeviceIdentity(put32(put32(d, 12, 4), 16, 0xfffffff0)); err != nil || got != want {
		t.Fatalf("vendor and product offsets leading nowhere: %+v, %v", got, err)
	}
	serial := win32test.StorageDeviceDescriptor(win32.StorageDeviceDescriptor{SerialNumber: "SN1"})
	for name, tc := range map[string]struct {
		buf  []byte
		want string
	}{
		"truncated":  {serial[:20], "STORAGE_DEVICE_DESCRIPTOR: Size at offset 4: 44 exceeds the 20 bytes returned (truncated answer)"},
		"not ASCII":  {append(serial[:41:41], 0xc3, 0xa9, 0), "STORAGE_DEVICE_DESCRIPTOR: SerialNumberOffset at offset 24: the string at 40 holds byte 0xc3 at 41, which is not printable ASCII"},
		"in header":  {put32(serial, 24, 8), "STORAGE_DEVICE_DESCRIPTOR: SerialNumberOffset at offset 24: 8 points into the 36-byte fixed part"},
		"Size small": {put32(serial, 4, 12), "STORAGE_DEVICE_DESCRIPTOR: Size at offset 4: 12 is less than the 36 bytes of the fixed part"},
	} {
		got, err := win32.ParseStorageDeviceIdentity(tc.buf)
		if err == nil || err.Error() != tc.want || got != (win32.StorageDeviceIdentity{}) {
			t.Errorf("%s: %+v, %v\nwant %q", name, got, err, tc.want)
		}
	}
}

func TestStorageBusTypeNames(t *testing.T) {
	for b, want := range map[win32.StorageBusType]string{
		win32.BusTypeScsi: "SCSI", win32.BusTypeAta: "ATA", win32.BusTypeSata: "SATA", win32.BusTypeVirtual: "Virtual",
		win32.BusTypeNvme: "NVMe", win32.BusTypeUfs: "UFS", win32.BusTypeNvmeof: "NVMe-oF", 0x15: "bus type 0x15", 0x7f: "bus type 0x7F",
	} {
		if got := b.String(); got != want {
			t.Errorf("%d.String() = %q, want %q", uint32(b), got, want)
		}
	}
}
