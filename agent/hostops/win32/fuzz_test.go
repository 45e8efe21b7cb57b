package win32_test

import (
	"bytes"
	"encoding/binary"
	"errors"
	"strings"
	"testing"
	"unicode/utf16"

	"github.com/pipeguard/pipeguard/agent/hostops/win32"
	"github.com/pipeguard/pipeguard/internal/testing/win32test"
)

// Every decoder answers any bytes with a value or a *LayoutError, never a
// panic, and what it reads lies in the bytes given.

func layoutError(t *testing.T, err error, buf []byte) {
	t.Helper()
	var le *win32.LayoutError
	if !errors.As(err, &le) || le.Offset < 0 || le.Offset > len(buf)+64 {
		t.Fatalf("error %v is not a *LayoutError naming a place in the %d-byte buffer", err, len(buf))
	}
}

func FuzzParseVolumeDiskExtents(f *testing.F) {
	two := win32test.VolumeDiskExtents(win32.DiskExtent{DiskNumber: 2, StartingOffset: 1 << 20, ExtentLength: 1 << 30},
		win32.DiskExtent{DiskNumber: 5, StartingOffset: 1 << 27, ExtentLength: 4096})
	for _, b := range [][]byte{two, two[:40], win32test.VolumeDiskExtents(), put32(two, 0, 0xffffffff), put64(two, 16, 1<<63), nil, []byte("garbage")} {
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, buf []byte) {
		ext, err := win32.ParseVolumeDiskExtents(buf)
		if err != nil {
			layoutError(t, err, buf)
			return
		}
		if len(ext) > 0 && 8+24*len(ext) > len(buf) {
			t.Fatalf("%d extents read from %d bytes", len(ext), len(buf))
		}
		for i, e := range ext {
			if e.DiskNumber != binary.LittleEndian.Uint32(buf[8+24*i:]) || e.StartingOffset < 0 || e.ExtentLength < 0 {
				t.Fatalf("extent %d = %+v does not match its bytes", i, e)
			}
		}
	})
}

func FuzzParseStorageDeviceNumber(f *testing.F) {
	f.Add(win32test.StorageDeviceNumber(win32.StorageDeviceNumber{DeviceType: 7, DeviceNumber: 1, PartitionNumber: 2}))
	f.Add([]byte{1, 2, 3})
	f.Fuzz(func(t *testing.T, buf []byte) {
		n, err := win32.ParseStorageDeviceNumber(buf)
		if err != nil {
			layoutError(t, err, buf)
			return
		}
		if !bytes.Equal(win32test.StorageDeviceNumber(n), buf[:12]) {
			t.Fatalf("%+v does not re-encode to its bytes", n)
		}
	})
}

func FuzzParseSCSIAddress(f *testing.F) {
	addr := win32test.SCSIAddress(win32.SCSIAddress{PortNumber: 3, PathId: 0, TargetId: 1, Lun: 7})
	f.Add(addr)
	f.Add(put32(addr, 0, 0xffffffff))
	f.Add(addr[:5])
	f.Fuzz(func(t *testing.T, buf []byte) {
		a, err := win32.ParseSCSIAddress(buf)
		if err != nil {
			layoutError(t, err, buf)
			return
		}
		if !bytes.Equal(win32test.SCSIAddress(a), buf[:8]) {
			t.Fatalf("%+v does not re-encode to its bytes (Length must be 8)", a)
		}
	})
}

func FuzzParseLengthInformation(f *testing.F) {
	f.Add(win32test.LengthInformation(1 << 40))
	f.Add(win32test.LengthInformation(-1))
	f.Add([]byte{0})
	f.Fuzz(func(t *testing.T, buf []byte) {
		n, err := win32.ParseLengthInformation(buf)
		if err != nil {
			layoutError(t, err, buf)
			return
		}
		if n < 0 || !bytes.Equal(win32test.LengthInformation(n), buf[:8]) {
			t.Fatalf("%d does not match its bytes", n)
		}
	})
}

func FuzzParseStorageDeviceDescriptor(f *testing.F) {
	full := win32test.StorageDeviceDescriptor(win32.StorageDeviceDescriptor{VendorId: "Msft", ProductId: "Virtual Disk", ProductRevision: "1.0", SerialNumber: " SN "})
	for _, b := range [][]byte{full, full[:30], put32(full, 4, 0xffffffff), put32(full, 24, 0xfffffff0), put32(full, 12, 4),
		win32test.StorageDeviceDescriptor(win32.StorageDeviceDescriptor{}), []byte("garbage")} {
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, buf []byte) {
		id, idErr := win32.ParseStorageDeviceIdentity(buf)
		if idErr != nil {
			layoutError(t, idErr, buf)
		}
		d, err := win32.ParseStorageDeviceDescriptor(buf)
		if err != nil {
			layoutError(t, err, buf)
			return
		}
		// Whatever the full parse reads, the identity reads the same.
		if idErr != nil || id.BusType != d.BusType || id.SerialNumber != d.SerialNumber {
			t.Fatalf("identity %+v, %v; the full descriptor %+v", id, idErr, d)
		}
		if int(d.Size) > len(buf) {
			t.Fatalf("Size %d past the %d bytes", d.Size, len(buf))
		}
		for _, s := range []string{d.VendorId, d.ProductId, d.ProductRevision, d.SerialNumber} {
			if s != "" && !bytes.Contains(buf[36:d.Size], append([]byte(s), 0)) {
				t.Fatalf("%q is not a NUL-ended string within Size", s)
			}
			if strings.ContainsFunc(s, func(r rune) bool { return r < 0x20 || r > 0x7e }) {
				t.Fatalf("%q is not printable ASCII", s)
			}
		}
	})
}

func FuzzParseReparsePoint(f *testing.F) {
	mp := win32test.MountPointReparse(`\??\Volume{452e318a-5cde-421e-9831-b9853c521012}\`, "")
	link := win32test.SymlinkReparse(`\??\UNC\srv\share\`, `\\srv\share\`, 0)
	for _, b := range [][]byte{mp, link, mp[:20], put16(mp, 4, 0xffff), put16(link, 8, 0xfffe), put16(link, 10, 3),
		win32test.OtherReparse(0x80000013, []byte("x")), win32test.SymlinkReparse("a", "", win32.SYMLINK_FLAG_RELATIVE), nil} {
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, buf []byte) {
		rp, err := win32.ParseReparsePoint(buf)
		if err != nil {
			layoutError(t, err, buf)
			return
		}
		if rp.Tag != win32.IO_REPARSE_TAG_MOUNT_POINT && rp.Tag != win32.IO_REPARSE_TAG_SYMLINK {
			if rp != (win32.ReparsePoint{Tag: rp.Tag}) {
				t.Fatalf("names read for tag 0x%08X: %+v", rp.Tag, rp)
			}
			return
		}
		if rp.SubstituteName == "" {
			t.Fatal("an empty substitute name was accepted")
		}
		for _, name := range []string{rp.SubstituteName, rp.PrintName} {
			var enc []byte
			for _, u := range utf16.Encode([]rune(name)) {
				enc = binary.LittleEndian.AppendUint16(enc, u)
			}
			if strings.ContainsRune(name, 0) || strings.ContainsRune(name, '\uFFFD') && !bytes.Contains(buf, []byte{0xfd, 0xff}) {
				t.Fatalf("name %q holds a NUL or a replacement character the bytes do not", name)
			}
			if !bytes.Contains(buf, enc) {
				t.Fatalf("name %q is not in the buffer as UTF-16", name)
			}
		}
	})
}

func FuzzParsePhysicalDrives(f *testing.F) {
	f.Add("PhysicalDrive0\x00C:\x00PhysicalDrive12\x00\x00")
	f.Add("PHYSICALDRIVE4294967296\x00physicaldrive07")
	f.Fuzz(func(t *testing.T, s string) {
		var units []uint16
		for _, r := range s {
			units = append(units, uint16(r))
		}
		drives := win32.ParsePhysicalDrives(win32.SplitMultiString(units))
		for i := 1; i < len(drives); i++ {
			if drives[i] <= drives[i-1] {
				t.Fatalf("drives %v are not increasing and unique", drives)
			}
		}
	})
}
