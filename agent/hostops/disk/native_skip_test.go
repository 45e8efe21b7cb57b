package disk

import (
	"context"
	"reflect"
	"testing"

	"github.com/pipeguard/pipeguard/agent/hostops/win32"
	"github.com/pipeguard/pipeguard/internal/testing/win32test"
)

// skipped records what a Native's Skipped is told.
type skipped struct{ got []string }

func (s *skipped) record(listing string, err error) { s.got = append(s.got, listing+": "+err.Error()) }

// A listing with one unreadable entry of each kind still lists the others,
// and tells Skipped of each entry it left out, naming the disk and the fault.
func TestNativeDiskListingsSkipOddEntries(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t)
	var s skipped
	f.n.Skipped = s.record
	h := f.host
	addr := &win32.SCSIAddress{PortNumber: 4, TargetId: 0, Lun: 2}
	// 4: a SCSI address that does not say its length; 5: one cut short.
	h.AddDisk(win32test.Disk{Number: 4, Bus: win32.BusTypeScsi, SCSI: addr})
	h.Answer(`\\.\PhysicalDrive4`, win32.IOCTL_SCSI_GET_ADDRESS, make([]byte, 8), nil)
	h.AddDisk(win32test.Disk{Number: 5, Bus: win32.BusTypeScsi, SCSI: addr})
	h.Answer(`\\.\PhysicalDrive5`, win32.IOCTL_SCSI_GET_ADDRESS, []byte{8, 0, 0, 0, 1}, nil)
	// 6: a disk that refuses to be opened.
	h.AddDisk(win32test.Disk{Number: 6, Bus: win32.BusTypeScsi, SCSI: addr})
	h.Answer(`\\.\PhysicalDrive6`, win32.IOCTL_SCSI_GET_ADDRESS, nil, win32test.Fail("CreateFileW", `\\.\PhysicalDrive6`, win32test.ErrAccessDenied))
	// 7: hostile bytes in vendor, product and revision, which are not read:
	// listed by both.
	h.AddDisk(win32test.Disk{Number: 7, Bus: win32.BusTypeVirtual, SCSI: &win32.SCSIAddress{PortNumber: 5, Lun: 7},
		Vendor: "Msft\x01\xff", Product: "Virtual\nDisk", Serial: " SN7 "})
	// 8: a serial number that is not ASCII; 9: a truncated page 83
	// descriptor; 10: a page 83 descriptor of hostile Size; 11: one shorter
	// than its header.
	h.AddDisk(win32test.Disk{Number: 8, Bus: win32.BusTypeNvme, Serial: "SN\xc3\xa9"})
	h.AddDisk(win32test.Disk{Number: 9, Page83: descriptor(naa6)[:20]})
	h.AddDisk(win32test.Disk{Number: 10, Page83: put32(descriptor(naa6), 4, 0xffffffff)})
	h.AddDisk(win32test.Disk{Number: 11, Page83: []byte{1, 0, 0}})
	// 12: a device descriptor that is garbage: no location, no IDs.
	h.AddDisk(win32test.Disk{Number: 12, Bus: win32.BusTypeScsi, SCSI: addr})
	h.Answer(`\\.\PhysicalDrive12`, win32.IOCTL_STORAGE_QUERY_PROPERTY, []byte("garbage!!"), nil)

	locs, err := f.n.ListDiskLocations(ctx)
	wantLocs := map[uint32]Location{
		1: {Adapter: "3", Target: "0", LUNID: "1"},
		2: {Adapter: "1", Target: "3", LUNID: "4"},
		3: {Adapter: "255", Target: "255", LUNID: "255"},
		7: {Adapter: "5", Target: "0", LUNID: "7"},
	}
	if err != nil || !reflect.DeepEqual(locs, wantLocs) {
		t.Fatalf("ListDiskLocations = %v, %v\nwant %v", locs, err, wantLocs)
	}
	ids, err := f.n.ListDiskIDs(ctx)
	wantIDs := map[uint32]IDs{
		0: {Page83: "0025385b71b01234", SerialNumber: "S4EWNX0N123456"},
		1: {Page83: "6001405a1b2c3d4e5f60718293a4b5c6", SerialNumber: "6002248066c7a8e3"},
		2: {}, 3: {Page83: "5000c50012345678", SerialNumber: "BIG"},
		4: {}, 5: {}, 6: {}, 7: {SerialNumber: "SN7"},
	}
	if err != nil || !reflect.DeepEqual(ids, wantIDs) {
		t.Fatalf("ListDiskIDs = %v, %v\nwant %v", ids, err, wantIDs)
	}
	want := []string{
		`ListDiskLocations: reading the location of disk 4: SCSI_ADDRESS: Length at offset 0: is 0, not the 8 bytes of the structure`,
		`ListDiskLocations: reading the location of disk 5: SCSI_ADDRESS: length at offset 0: 5 bytes were returned, the structure takes 8 (truncated answer)`,
		`ListDiskLocations: reading the location of disk 6: CreateFileW \\.\PhysicalDrive6: Access is denied.`,
		`ListDiskLocations: reading the location of disk 8: STORAGE_DEVICE_DESCRIPTOR: SerialNumberOffset at offset 24: the string at 40 holds byte 0xc3 at 42, which is not printable ASCII`,
		`ListDiskLocations: reading the location of disk 12: DeviceIoControl(IOCTL_STORAGE_QUERY_PROPERTY): the descriptor's Size 560293729 exceeds the 65536 bytes a descriptor may take`,
		`ListDiskIDs: reading the serial number of disk 8: STORAGE_DEVICE_DESCRIPTOR: SerialNumberOffset at offset 24: the string at 40 holds byte 0xc3 at 42, which is not printable ASCII`,
		`ListDiskIDs: reading the page 83 ID of disk 9: STORAGE_DEVICE_ID_DESCRIPTOR: Size at offset 4: 44 exceeds the 20 bytes read (truncated descriptor)`,
		`ListDiskIDs: reading the page 83 ID of disk 10: DeviceIoControl(IOCTL_STORAGE_QUERY_PROPERTY): the descriptor's Size 4294967295 exceeds the 1048576 bytes a descriptor may take`,
		`ListDiskIDs: reading the page 83 ID of disk 11: STORAGE_DESCRIPTOR_HEADER: Size at offset 4: 3 bytes were returned, the header takes 8 (truncated answer)`,
		`ListDiskIDs: reading the page 83 ID of disk 12: DeviceIoControl(IOCTL_STORAGE_QUERY_PROPERTY): the descriptor's Size 560293729 exceeds the 1048576 bytes a descriptor may take`,
	}
	if !reflect.DeepEqual(s.got, want) {
		t.Fatalf("Skipped was told\n%q\nwant\n%q", s.got, want)
	}
	// Without Skipped the same listings still answer.
	f.n.Skipped = nil
	if locs, err := f.n.ListDiskLocations(ctx); err != nil || len(locs) != len(wantLocs) {
		t.Fatalf("without Skipped: %v, %v", locs, err)
	}
}
