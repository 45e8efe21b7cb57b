package system

import (
	"encoding/binary"
	"encoding/hex"
	"strings"
	"testing"
	"unicode/utf8"
)

// The fixtures are built from the layouts of DSP0134 (SMBIOS) and
// Microsoft's RawSMBIOSData; see smbios.go.

// structure builds an SMBIOS structure: its header (type, Length, handle),
// the rest of its formatted area, and its string set.
func structure(typ byte, handle uint16, rest []byte, strs ...string) []byte {
	b := []byte{typ, byte(smbiosHeaderSize + len(rest)), byte(handle), byte(handle >> 8)}
	b = append(b, rest...)
	if len(strs) == 0 {
		return append(b, 0, 0)
	}
	for _, s := range strs {
		b = append(append(b, s...), 0)
	}
	return append(b, 0)
}

// biosInformation is a BIOS Information (type 0) structure of SMBIOS 2.4
// and later (Length 18h): Vendor 1, BIOS Version 2, Starting Address
// Segment E000h, Release Date 3, ROM Size, Characteristics, their two
// extension bytes, and the BIOS and embedded controller releases.
func biosInformation() []byte {
	rest := []byte{1, 2, 0x00, 0xe0, 3, 0x0f, 0x80, 0x98, 0x0b, 0, 0, 0, 0, 0, 0x01, 0x0c, 4, 2, 0xff, 0xff}
	return structure(0, 0x0000, rest, "Acme BIOS", "4.2.1", "03/14/2024")
}

// systemInformation is a System Information (type 1) structure of SMBIOS
// 2.4 and later (Length 1Bh): Manufacturer 1, Product Name 2, Version 3,
// Serial Number serial, a UUID, Wake-up Type "Power Switch", SKU Number
// and Family none.
func systemInformation(serial byte, strs ...string) []byte {
	rest := []byte{1, 2, 3, serial}
	rest = append(rest, 0x42, 0x1a, 0x2b, 0x3c, 0x4d, 0x5e, 0x6f, 0x70, 0x81, 0x92, 0xa3, 0xb4, 0xc5, 0xd6, 0xe7, 0xf8)
	rest = append(rest, 0x06, 0, 0)
	return structure(1, 0x0001, rest, strs...)
}

// endOfTable is an End-of-Table (type 127) structure.
func endOfTable() []byte { return structure(127, 0xfeff, nil) }

// rawSMBIOS is a RawSMBIOSData of SMBIOS 3.4 holding the structures.
func rawSMBIOS(structures ...[]byte) []byte {
	var table []byte
	for _, s := range structures {
		table = append(table, s...)
	}
	return rawSMBIOSLength(uint32(len(table)), table)
}

// rawSMBIOSLength is a RawSMBIOSData whose Length says n, followed by data.
func rawSMBIOSLength(n uint32, data []byte) []byte {
	raw := []byte{0, 3, 4, 0, 0, 0, 0, 0}
	binary.LittleEndian.PutUint32(raw[4:], n)
	return append(raw, data...)
}

func cat(parts ...[]byte) []byte {
	var b []byte
	for _, p := range parts {
		b = append(b, p...)
	}
	return b
}

// wineTable is what Wine 8's GetSystemFirmwareTable('RSMB', 0) returns on a
// host without /sys/class/dmi: SMBIOS 2.4 with BIOS, System (Serial Number
// 0), Chassis, Base Board, Boot Information and End-of-Table structures,
// none with strings.
const wineTable = "000204007b000000" +
	"0018000000000000000004000000000000000000ffffffff0000" +
	"011b0100000000003d1219c7c4c5404aaa1f6d2a48adfda40200000000" +
	"0315020000020000000202020200000000000000030000" +
	"020f03000000000000050002000a000000" +
	"20140400000000000000000000000000000000000000" +
	"7f0405000000"

func mustHex(t testing.TB, s string) []byte {
	t.Helper()
	b, err := hex.DecodeString(s)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestSystemSerialNumber(t *testing.T) {
	sys := systemInformation(4, "Acme", "Node 9000", "1.0", "SN-0042")
	cases := map[string]struct {
		raw  []byte
		want string
	}{
		"after BIOS Information": {raw: rawSMBIOS(biosInformation(), sys, endOfTable()), want: "SN-0042"},
		"first structure":        {raw: rawSMBIOS(sys), want: "SN-0042"},
		"spaces trimmed":         {raw: rawSMBIOS(systemInformation(1, "  VMware-42 1a 2b 3c-4d 5e  ")), want: "VMware-42 1a 2b 3c-4d 5e"},
		"serial is string 2":     {raw: rawSMBIOS(systemInformation(2, "Acme", "SERIAL", "Node")), want: "SERIAL"},
		"no serial (string 0)":   {raw: rawSMBIOS(biosInformation(), systemInformation(0, "Acme", "Node", "1.0")), want: ""},
		"SMBIOS 2.0, Length 8":   {raw: rawSMBIOS(structure(1, 1, []byte{1, 2, 3, 4}, "Acme", "Node", "1.0", "OLD-SN")), want: "OLD-SN"},
		"after a structure without strings": {
			raw:  rawSMBIOS(structure(32, 0x20, []byte{0, 0, 0, 0, 0, 0, 0}), sys),
			want: "SN-0042",
		},
		"first of two": {raw: rawSMBIOS(sys, systemInformation(1, "OTHER")), want: "SN-0042"},
		"bytes after the table are not read": {
			raw:  append(rawSMBIOS(sys), 0xde, 0xad),
			want: "SN-0042",
		},
		// A run of bytes that are not UTF-8 becomes one U+FFFD.
		"not UTF-8": {raw: rawSMBIOS(systemInformation(1, "\xff\xfeSN\x80")), want: "\uFFFDSN\uFFFD"},
		"Wine 8":    {raw: mustHex(t, wineTable), want: ""},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			got, err := SystemSerialNumber(c.raw)
			if err != nil || got != c.want {
				t.Fatalf("SystemSerialNumber = %q, %v; want %q", got, err, c.want)
			}
		})
	}
}

func TestSystemSerialNumberErrors(t *testing.T) {
	sys := systemInformation(4, "Acme", "Node", "1.0", "SN-0042")
	bios := biosInformation()
	noSystem := "the SMBIOS table has no System Information (type 1) structure, which holds the serial number"
	cases := map[string]struct {
		raw  []byte
		want string
	}{
		"nothing":              {raw: nil, want: "RawSMBIOSData of 0 bytes: its header alone is 8 bytes"},
		"truncated header":     {raw: []byte{0, 3, 4, 0, 0x1b}, want: "RawSMBIOSData of 5 bytes: its header alone is 8 bytes"},
		"Length past the data": {raw: rawSMBIOSLength(100, sys[:10]), want: "RawSMBIOSData is truncated: its Length says 100 bytes of SMBIOS table, 10 follow the header"},
		"Length of 4 GiB":      {raw: rawSMBIOSLength(0xffffffff, sys), want: "RawSMBIOSData is truncated: its Length says 4294967295 bytes of SMBIOS table, 50 follow the header"},
		"empty table":          {raw: rawSMBIOS(), want: noSystem},
		"no such structure":    {raw: rawSMBIOS(bios, endOfTable()), want: noSystem},
		"after End-of-Table":   {raw: rawSMBIOS(bios, endOfTable(), sys), want: noSystem},
		"truncated structure header": {
			raw:  rawSMBIOS(bios, []byte{1, 0x1b}),
			want: "SMBIOS structure at offset 52: only 2 bytes are left in the table, a structure header is 4",
		},
		"Length below the header": {
			raw:  rawSMBIOS([]byte{1, 3, 1, 0, 0, 0}),
			want: "SMBIOS structure at offset 0 (type 1): its Length 3 is less than its 4-byte header",
		},
		"Length 0": {
			raw:  rawSMBIOS(bios, []byte{0, 0, 0, 0, 0, 0}),
			want: "SMBIOS structure at offset 52 (type 0): its Length 0 is less than its 4-byte header",
		},
		"formatted area past the end": {
			raw:  rawSMBIOS(sys[:10]),
			want: "SMBIOS structure at offset 0 (type 1) is truncated: its formatted area of 27 bytes runs past the end of the table (10 bytes)",
		},
		"string set without its terminator": {
			raw:  rawSMBIOS(sys[:len(sys)-1]),
			want: "SMBIOS structure at offset 0 (type 1) is truncated: its string set has no terminating double NUL before the end of the table",
		},
		"last string without its terminator": {
			raw:  rawSMBIOS(sys[:len(sys)-2]),
			want: "SMBIOS structure at offset 0 (type 1) is truncated: its string set has no terminating double NUL before the end of the table",
		},
		"no strings and a single NUL": {
			raw:  rawSMBIOS(structure(32, 0x20, []byte{0, 0, 0, 0, 0, 0, 0})[:11]),
			want: "SMBIOS structure at offset 0 (type 32) is truncated: its string set has no terminating double NUL before the end of the table",
		},
		"strings of the structure before it unterminated": {
			raw:  rawSMBIOS(bios[:len(bios)-2]),
			want: "SMBIOS structure at offset 0 (type 0) is truncated: its string set has no terminating double NUL before the end of the table",
		},
		"string set begins with a single NUL": {
			raw:  rawSMBIOS(cat(structure(1, 1, []byte{1, 2, 3, 1})[:8], []byte("\x00SN\x00\x00"))),
			want: "SMBIOS structure at offset 0 (type 1): its string set begins with a single NUL",
		},
		"serial past the string set": {
			raw:  rawSMBIOS(bios, systemInformation(5, "Acme", "Node")),
			want: "Serial Number: SMBIOS structure at offset 52 (type 1): string 5 is asked for, but the structure has 2 strings",
		},
		"serial in a structure without strings": {
			raw:  rawSMBIOS(systemInformation(1)),
			want: "Serial Number: SMBIOS structure at offset 0 (type 1): string 1 is asked for, but the structure has 0 strings",
		},
		"System Information too short": {
			raw:  rawSMBIOS(structure(1, 1, []byte{1, 2, 3}, "Acme", "Node", "1.0")),
			want: "SMBIOS System Information structure at offset 0: its Length 7 is too short to hold the Serial Number at offset 7",
		},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			got, err := SystemSerialNumber(c.raw)
			if err == nil || err.Error() != c.want {
				t.Fatalf("SystemSerialNumber = %q, %v\nwant error %q", got, err, c.want)
			}
		})
	}
}

// FuzzSystemSerialNumber: no input makes the parser panic or hang, and a
// serial number it returns is UTF-8, trimmed, and taken from the input.
func FuzzSystemSerialNumber(f *testing.F) {
	sys := systemInformation(4, "Acme", "Node", "1.0", "SN-0042")
	for _, seed := range [][]byte{
		rawSMBIOS(biosInformation(), sys, endOfTable()),
		rawSMBIOS(systemInformation(0)),
		rawSMBIOS(sys[:len(sys)-1]),
		rawSMBIOSLength(100, sys),
		mustHex(f, wineTable),
		nil,
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		got, err := SystemSerialNumber(raw)
		if err != nil {
			if got != "" {
				t.Fatalf("%q returned with error %v", got, err)
			}
			return
		}
		if !utf8.ValidString(got) || strings.TrimSpace(got) != got {
			t.Fatalf("serial number %q is not trimmed UTF-8", got)
		}
		if len(got) > 3*len(raw) {
			t.Fatalf("serial number of %d bytes from %d bytes of input", len(got), len(raw))
		}
	})
}
