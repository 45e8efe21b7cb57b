package disk

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"strings"
	"testing"
)

// ident is one STORAGE_IDENTIFIER to encode. next < 0 means the aligned
// length of the structure, as Windows lays identifiers out; size < 0 means
// len(id).
type ident struct {
	codeSet StorageIdentifierCodeSet
	typ     StorageIdentifierType
	assoc   StorageAssociationType
	id      []byte
	size    int
	next    int
}

func id(codeSet StorageIdentifierCodeSet, typ StorageIdentifierType, assoc StorageAssociationType, b []byte) ident {
	return ident{codeSet: codeSet, typ: typ, assoc: assoc, id: b, size: -1, next: -1}
}

func align4(n int) int { return (n + 3) &^ 3 }

// descriptor encodes a STORAGE_DEVICE_ID_DESCRIPTOR with Version 16,
// NumberOfIdentifiers len(ids) and Size the bytes written.
func descriptor(ids ...ident) []byte {
	b := make([]byte, 12)
	for _, x := range ids {
		start := len(b)
		size := x.size
		if size < 0 {
			size = len(x.id)
		}
		next := x.next
		if next < 0 {
			next = align4(16 + len(x.id))
		}
		b = binary.LittleEndian.AppendUint32(b, uint32(x.codeSet))
		b = binary.LittleEndian.AppendUint32(b, uint32(x.typ))
		b = binary.LittleEndian.AppendUint16(b, uint16(size))
		b = binary.LittleEndian.AppendUint16(b, uint16(next))
		b = binary.LittleEndian.AppendUint32(b, uint32(x.assoc))
		b = append(b, x.id...)
		for len(b) < start+align4(16+len(x.id)) {
			b = append(b, 0)
		}
	}
	binary.LittleEndian.PutUint32(b[0:], 16)
	binary.LittleEndian.PutUint32(b[4:], uint32(len(b)))
	binary.LittleEndian.PutUint32(b[8:], uint32(len(ids)))
	return b
}

// put32 returns a copy of b with the ULONG at off set to v.
func put32(b []byte, off int, v uint32) []byte {
	b = bytes.Clone(b)
	binary.LittleEndian.PutUint32(b[off:], v)
	return b
}

// put16 returns a copy of b with the USHORT at off set to v.
func put16(b []byte, off int, v uint16) []byte {
	b = bytes.Clone(b)
	binary.LittleEndian.PutUint16(b[off:], v)
	return b
}

func unhex(s string) []byte {
	b, err := hex.DecodeString(s)
	if err != nil {
		panic(err)
	}
	return b
}

// Identifiers as disks report them.
var (
	naa5  = id(StorageIdCodeSetBinary, StorageIdTypeFCPHName, StorageIdAssocDevice, unhex("5000c50012345678"))
	naa6  = id(StorageIdCodeSetBinary, StorageIdTypeFCPHName, StorageIdAssocDevice, unhex("6001405a1b2c3d4e5f60718293a4b5c6"))
	eui64 = id(StorageIdCodeSetBinary, StorageIdTypeEUI64, StorageIdAssocDevice, unhex("0025385B71B01234"))
	t10   = id(StorageIdCodeSetAscii, StorageIdTypeVendorId, StorageIdAssocDevice,
		[]byte("LIO-ORG disk0           1b2c3d4e-5f60-7182-93a4-b5c6d7e8f901 "))
	vendorASCII = id(StorageIdCodeSetAscii, StorageIdTypeVendorSpecific, StorageIdAssocDevice, []byte("  SN-0042\x00"))
	portNAA     = id(StorageIdCodeSetBinary, StorageIdTypeFCPHName, StorageIdAssocPort, unhex("500140512345678a"))
	targetName  = id(StorageIdCodeSetAscii, StorageIdTypeScsiNameString, StorageIdAssocTarget, []byte("iqn.2003-01.org.linux-iscsi.t1\x00\x00"))
	relPort     = id(StorageIdCodeSetBinary, StorageIdTypePortRelative, StorageIdAssocPort, unhex("00000001"))
	utf8Name    = id(StorageIdCodeSetUtf8, StorageIdTypeScsiNameString, StorageIdAssocDevice, []byte("naa.6001405A1B2C3D4E\x00\x00\x00\x00"))
	reserved    = id(StorageIdCodeSetReserved, StorageIdTypeVendorSpecific, StorageIdAssocDevice, []byte{1, 2, 3})
)

func TestPage83ID(t *testing.T) {
	// A NextOffset that skips 4 unused bytes after the first identifier.
	skipped := descriptor(portNAA, naa5)
	skipped = append(skipped[:12+24], append(make([]byte, 4), skipped[12+24:]...)...)
	skipped = put16(skipped, 12+10, 28)
	skipped = put32(skipped, 4, uint32(len(skipped)))

	cases := []struct {
		name  string
		buf   []byte
		want  string
		count int
	}{
		{"NAA registered (NAA 5)", descriptor(naa5), "5000c50012345678", 1},
		{"NAA registered extended (NAA 6)", descriptor(naa6), "6001405a1b2c3d4e5f60718293a4b5c6", 1},
		{"EUI-64, upper-case bytes become lower-case hex", descriptor(eui64), "0025385b71b01234", 1},
		{"T10 vendor ID kept with its spaces", descriptor(t10),
			"LIO-ORG disk0           1b2c3d4e-5f60-7182-93a4-b5c6d7e8f901 ", 1},
		{"vendor-specific ASCII kept with spaces and NUL", descriptor(vendorASCII), "  SN-0042\x00", 1},
		{"first qualifying wins over a later NAA", descriptor(t10, naa6),
			"LIO-ORG disk0           1b2c3d4e-5f60-7182-93a4-b5c6d7e8f901 ", 2},
		{"order, not type: EUI-64 before NAA", descriptor(eui64, naa6), "0025385b71b01234", 2},
		{"order, not type: vendor-specific before NAA", descriptor(vendorASCII, naa5), "  SN-0042\x00", 2},
		{"port and target associations skipped", descriptor(portNAA, relPort, targetName, naa6),
			"6001405a1b2c3d4e5f60718293a4b5c6", 4},
		{"UTF-8 and reserved code sets skipped", descriptor(utf8Name, reserved, eui64), "0025385b71b01234", 3},
		{"typical LIO disk", descriptor(naa6, t10, relPort, id(StorageIdCodeSetBinary, StorageIdTypeTargetPortGroup, StorageIdAssocPort, unhex("00000000"))),
			"6001405a1b2c3d4e5f60718293a4b5c6", 4},
		{"only port and target identifiers", descriptor(portNAA, targetName), "", 2},
		{"only UTF-8", descriptor(utf8Name), "", 1},
		{"empty descriptor", descriptor(), "", 0},
		{"empty binary identifier", descriptor(id(StorageIdCodeSetBinary, StorageIdTypeFCPHName, StorageIdAssocDevice, nil), naa6), "", 2},
		{"bytes after Size ignored", append(descriptor(naa5), make([]byte, 4096)...), "5000c50012345678", 1},
		{"last NextOffset 0", descriptor(portNAA, ident{StorageIdCodeSetBinary, StorageIdTypeFCPHName, StorageIdAssocDevice, unhex("5000c50012345678"), -1, 0}),
			"5000c50012345678", 2},
		{"NextOffset past the aligned length", skipped, "5000c50012345678", 2},
		// CSI Proxy reads the same identifier again for each count left.
		{"NextOffset 0 before a match ends the walk with none", put16(descriptor(portNAA, naa6), 12+10, 0), "", 1},
		{"NextOffset 0 after the match", put16(descriptor(naa5, portNAA), 12+10, 0), "5000c50012345678", 1},
		{"NextOffset 0 after a skipped identifier", put16(descriptor(portNAA, targetName, naa6), 12+24+10, 0), "", 2},
	}

	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			d, err := ParsePage83(c.buf)
			if err != nil {
				t.Fatalf("ParsePage83: %v", err)
			}
			if len(d.Identifiers) != c.count {
				t.Errorf("got %d identifiers, want %d", len(d.Identifiers), c.count)
			}
			if got := d.Page83ID(); got != c.want {
				t.Errorf("StorageDeviceIdDescriptor.Page83ID() = %q, want %q", got, c.want)
			}
			got, err := Page83ID(c.buf)
			if err != nil || got != c.want {
				t.Errorf("Page83ID() = %q, %v; want %q", got, err, c.want)
			}
		})
	}
}

func TestParsePage83Fields(t *testing.T) {
	buf := descriptor(portNAA, t10, naa6)
	d, err := ParsePage83(buf)
	if err != nil {
		t.Fatal(err)
	}
	if d.Version != 16 || d.Size != uint32(len(buf)) {
		t.Errorf("Version, Size = %d, %d; want 16, %d", d.Version, d.Size, len(buf))
	}
	want := []StorageIdentifier{
		{StorageIdCodeSetBinary, StorageIdTypeFCPHName, StorageIdAssocPort, 12, portNAA.id},
		{StorageIdCodeSetAscii, StorageIdTypeVendorId, StorageIdAssocDevice, 36, t10.id},
		{StorageIdCodeSetBinary, StorageIdTypeFCPHName, StorageIdAssocDevice, 36 + align4(16+len(t10.id)), naa6.id},
	}
	if len(d.Identifiers) != len(want) {
		t.Fatalf("got %d identifiers, want %d", len(d.Identifiers), len(want))
	}
	for i, w := range want {
		g := d.Identifiers[i]
		if g.CodeSet != w.CodeSet || g.Type != w.Type || g.Association != w.Association || g.Offset != w.Offset || !bytes.Equal(g.Identifier, w.Identifier) {
			t.Errorf("identifier %d = %+v, want %+v", i, g, w)
		}
	}
	chosen, ok := d.Page83Identifier()
	if !ok || chosen.Offset != 36 {
		t.Errorf("Page83Identifier() = %+v, %v; want the T10 vendor ID at offset 36", chosen, ok)
	}
	// The identifiers are copies: the buffer may be reused.
	for i := range buf {
		buf[i] = 0xff
	}
	if got := d.Page83ID(); got != string(t10.id) {
		t.Errorf("after the buffer changed, Page83ID() = %q", got)
	}
}

func TestParsePage83Faults(t *testing.T) {
	one := descriptor(naa6) // 12 + 32 bytes
	two := descriptor(portNAA, naa6)
	cases := []struct {
		name   string
		buf    []byte
		field  string
		offset int
		reason string
		// lazyOK: Page83ID still answers, as CSI Proxy would, because the
		// fault lies after the identifier it reports.
		lazyOK string
	}{
		{"nil", nil, "header", 0, "0 bytes", ""},
		{"short header", one[:11], "header", 0, "11 bytes", ""},
		{"Size below the header", put32(one, 4, 11), "Size", 4, "11 is less than", ""},
		{"Size past the buffer", one[:30], "Size", 4, "44 exceeds the 30 bytes read", ""},
		{"Size 4 GiB", put32(one, 4, 0xffffffff), "Size", 4, "4294967295 exceeds", ""},
		{"absurd NumberOfIdentifiers", put32(one, 8, 0xffffffff), "NumberOfIdentifiers", 8, "4294967295 identifiers cannot fit in Size 44 (at most 2)",
			"6001405a1b2c3d4e5f60718293a4b5c6"},
		{"NumberOfIdentifiers one too many", put32(two, 8, 3), "STORAGE_IDENTIFIER 2", 12 + 24 + 32, "header runs past Size 68",
			"6001405a1b2c3d4e5f60718293a4b5c6"},
		{"IdentifierSize past Size", put16(one, 12+8, 17+16), "STORAGE_IDENTIFIER 0 IdentifierSize", 20, "33 bytes from offset 28 run past Size 44", ""},
		{"IdentifierSize 0xffff", put16(two, 12+24+8, 0xffff), "STORAGE_IDENTIFIER 1 IdentifierSize", 12 + 24 + 8, "65535 bytes", ""},
		{"NextOffset overlaps", put16(two, 12+10, 20), "STORAGE_IDENTIFIER 0 NextOffset", 22, "20 overlaps this identifier's 24 bytes", ""},
		{"NextOffset past Size", put16(two, 12+10, 0xfff0), "STORAGE_IDENTIFIER 0 NextOffset", 22, "65520 leads to offset 65532, past Size 68", ""},
		{"fault after the reported identifier", put16(descriptor(naa5, portNAA), 12+10, 20), "STORAGE_IDENTIFIER 0 NextOffset", 22, "20 overlaps",
			"5000c50012345678"},
		{"garbage", []byte("this is not a STORAGE_DEVICE_ID_DESCRIPTOR at all"), "Size", 4, "exceeds", ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := ParsePage83(c.buf)
			var pe *Page83Error
			if !errors.As(err, &pe) {
				t.Fatalf("ParsePage83 error = %v, want a *Page83Error", err)
			}
			if pe.Field != c.field || pe.Offset != c.offset || !strings.Contains(pe.Reason, c.reason) {
				t.Errorf("ParsePage83 error = %q; want field %q at offset %d, reason containing %q", err, c.field, c.offset, c.reason)
			}
			if !strings.Contains(err.Error(), "offset") {
				t.Errorf("error %q does not say where", err)
			}
			got, err := Page83ID(c.buf)
			if c.lazyOK != "" {
				if err != nil || got != c.lazyOK {
					t.Errorf("Page83ID() = %q, %v; want %q", got, err, c.lazyOK)
				}
			} else if err == nil {
				t.Errorf("Page83ID() = %q, no error", got)
			}
		})
	}
}

// Identifiers read before a fault are returned with the error.
func TestParsePage83PartialResult(t *testing.T) {
	buf := put16(descriptor(portNAA, naa6, eui64), 12+24+10, 20)
	d, err := ParsePage83(buf)
	if err == nil {
		t.Fatal("no error")
	}
	if len(d.Identifiers) != 2 || d.Page83ID() != "6001405a1b2c3d4e5f60718293a4b5c6" {
		t.Errorf("partial result %+v", d)
	}
}

// csiProxyWalk reads buf the way CSI Proxy's GetDiskPage83ID does: it
// trusts NumberOfIdentifiers, IdentifierSize and NextOffset and ignores
// Size. ok is false where CSI Proxy would read past buf.
func csiProxyWalk(buf []byte) (id string, ok bool) {
	if len(buf) < 12 {
		return "", false
	}
	n := binary.LittleEndian.Uint32(buf[8:])
	off := 12
	for i := uint32(0); i < n; i++ {
		if off+16 > len(buf) {
			return "", false
		}
		codeSet := binary.LittleEndian.Uint32(buf[off:])
		size := int(binary.LittleEndian.Uint16(buf[off+8:]))
		next := int(binary.LittleEndian.Uint16(buf[off+10:]))
		assoc := binary.LittleEndian.Uint32(buf[off+12:])
		if assoc == 0 && (codeSet == 1 || codeSet == 2) {
			if off+16+size > len(buf) {
				return "", false
			}
			b := buf[off+16 : off+16+size]
			if codeSet == 2 {
				return string(b), true
			}
			return hex.EncodeToString(b), true
		}
		off += next
	}
	return "", true
}

func FuzzParsePage83(f *testing.F) {
	for _, b := range [][]byte{
		descriptor(), descriptor(naa5), descriptor(naa6), descriptor(eui64), descriptor(t10),
		descriptor(vendorASCII), descriptor(portNAA, targetName, naa6), descriptor(utf8Name, reserved, eui64),
		put16(descriptor(portNAA, naa6), 22, 0), put32(descriptor(naa6), 8, 0xffffffff),
		put16(descriptor(naa6), 20, 0xffff), []byte("garbage"),
	} {
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, buf []byte) {
		d, err := ParsePage83(buf)
		for i, x := range d.Identifiers {
			start := x.Offset + 16
			if x.Offset < 12 || start+len(x.Identifier) > len(buf) || start+len(x.Identifier) > int(d.Size) {
				t.Fatalf("identifier %d at %d+%d lies outside the %d-byte buffer (Size %d)", i, x.Offset, len(x.Identifier), len(buf), d.Size)
			}
			if !bytes.Equal(buf[start:start+len(x.Identifier)], x.Identifier) {
				t.Fatalf("identifier %d differs from the buffer", i)
			}
		}
		lazy, lazyErr := Page83ID(buf)
		if err != nil {
			var pe *Page83Error
			if !errors.As(err, &pe) || pe.Offset < 0 || pe.Offset > len(buf) {
				t.Fatalf("error %v does not name a place in the buffer", err)
			}
			return
		}
		// Fewer only where a NextOffset of 0 ended them.
		if n, count := len(d.Identifiers), binary.LittleEndian.Uint32(buf[8:]); uint32(n) != count &&
			(n == 0 || uint32(n) > count || binary.LittleEndian.Uint16(buf[d.Identifiers[n-1].Offset+10:]) != 0) {
			t.Fatalf("%d identifiers, NumberOfIdentifiers %d", n, count)
		}
		if lazyErr != nil || lazy != d.Page83ID() {
			t.Fatalf("Page83ID() = %q, %v; descriptor says %q", lazy, lazyErr, d.Page83ID())
		}
		// A descriptor that parses is read by CSI Proxy to the same ID.
		if want, ok := csiProxyWalk(buf); !ok || want != lazy {
			t.Fatalf("CSI Proxy's reading gives %q (%v), ours %q", want, ok, lazy)
		}
	})
}
