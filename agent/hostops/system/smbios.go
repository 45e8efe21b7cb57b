package system

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"strings"
)

// This file reads the answer of GetSystemFirmwareTable('RSMB', 0, ...): the
// RawSMBIOSData structure of Microsoft's documentation of that function,
// little-endian, followed by the SMBIOS structure table of the DMTF SMBIOS
// Reference Specification (DSP0134):
//
//	RawSMBIOSData                       SMBIOS structure (from its start)
//	0 BYTE  Used20CallingMethod         0 BYTE Type
//	1 BYTE  SMBIOSMajorVersion          1 BYTE Length (formatted area, header included)
//	2 BYTE  SMBIOSMinorVersion          2 WORD Handle
//	3 BYTE  DmiRevision                 4 ...  the rest of the formatted area
//	4 DWORD Length (of the table)       Length: the string set
//	8 BYTE  SMBIOSTableData[Length]
//
// The string set follows the formatted area: each string ends with a NUL
// and the set with one more NUL; a structure without strings is followed by
// two NULs. A string field of the formatted area holds the string's number
// in the set, counting from 1; 0 means no string. Type 127 ends the table.
//
// Win32_BIOS.SerialNumber is the Serial Number of the System Information
// (type 1) structure, the BYTE string number at offset 07h. Microsoft's
// Win32_BIOS page names no SMBIOS field for SerialNumber (it maps it only
// to MIF.DMTF|ComponentID|001.4), but its value is that field: Kubernetes'
// vSphere cloud provider reads the same VM serial with
// `wmic bios get serialnumber` on Windows and from
// /sys/class/dmi/id/product_serial on Linux (legacy-cloud-providers/vsphere,
// vsphere_util_windows.go and vsphere_util_linux.go), and Linux fills
// product_serial from type 1, offset 7 (drivers/firmware/dmi_scan.c).

// rawSMBIOSDataHeaderSize is the size of RawSMBIOSData before its table.
const rawSMBIOSDataHeaderSize = 8

// SMBIOS structure types and offsets used here.
const (
	smbiosTypeSystemInformation = 1
	smbiosTypeEndOfTable        = 127
	smbiosHeaderSize            = 4
	// systemSerialNumberOffset is the Serial Number of System Information.
	systemSerialNumberOffset = 0x07
)

// errNoSystemInformation is a table without a System Information structure.
var errNoSystemInformation = errors.New("the SMBIOS table has no System Information (type 1) structure, which holds the serial number")

// smbiosStructure is one structure of the table.
type smbiosStructure struct {
	offset    int    // in the table
	formatted []byte // the formatted area, header included
	strings   [][]byte
}

func (s smbiosStructure) typ() byte { return s.formatted[0] }

// str returns string number n of the structure; 0 is no string.
func (s smbiosStructure) str(n byte) (string, error) {
	if n == 0 {
		return "", nil
	}
	if int(n) > len(s.strings) {
		return "", fmt.Errorf("SMBIOS structure at offset %d (type %d): string %d is asked for, but the structure has %d strings", s.offset, s.typ(), n, len(s.strings))
	}
	return string(s.strings[n-1]), nil
}

// smbiosTable returns the SMBIOS structure table of raw, a RawSMBIOSData.
func smbiosTable(raw []byte) ([]byte, error) {
	if len(raw) < rawSMBIOSDataHeaderSize {
		return nil, fmt.Errorf("RawSMBIOSData of %d bytes: its header alone is %d bytes", len(raw), rawSMBIOSDataHeaderSize)
	}
	n := binary.LittleEndian.Uint32(raw[4:])
	if uint64(n) > uint64(len(raw)-rawSMBIOSDataHeaderSize) {
		return nil, fmt.Errorf("RawSMBIOSData is truncated: its Length says %d bytes of SMBIOS table, %d follow the header", n, len(raw)-rawSMBIOSDataHeaderSize)
	}
	return raw[rawSMBIOSDataHeaderSize : rawSMBIOSDataHeaderSize+int(n)], nil
}

// findSMBIOSStructure returns the first structure of type want in table,
// reading every structure before it; found is false when the table ends
// first, at its end or at an End-of-Table (type 127) structure.
func findSMBIOSStructure(table []byte, want byte) (s smbiosStructure, found bool, err error) {
	for off := 0; off < len(table); {
		s, next, err := readSMBIOSStructure(table, off)
		if err != nil {
			return smbiosStructure{}, false, err
		}
		if s.typ() == want {
			return s, true, nil
		}
		if s.typ() == smbiosTypeEndOfTable {
			break
		}
		off = next
	}
	return smbiosStructure{}, false, nil
}

// readSMBIOSStructure reads the structure at off and returns it with the
// offset of the next one.
func readSMBIOSStructure(table []byte, off int) (smbiosStructure, int, error) {
	if left := len(table) - off; left < smbiosHeaderSize {
		return smbiosStructure{}, 0, fmt.Errorf("SMBIOS structure at offset %d: only %d bytes are left in the table, a structure header is %d", off, left, smbiosHeaderSize)
	}
	typ, length := table[off], int(table[off+1])
	if length < smbiosHeaderSize {
		return smbiosStructure{}, 0, fmt.Errorf("SMBIOS structure at offset %d (type %d): its Length %d is less than its %d-byte header", off, typ, length, smbiosHeaderSize)
	}
	if off+length > len(table) {
		return smbiosStructure{}, 0, fmt.Errorf("SMBIOS structure at offset %d (type %d) is truncated: its formatted area of %d bytes runs past the end of the table (%d bytes)", off, typ, length, len(table))
	}
	s := smbiosStructure{offset: off, formatted: table[off : off+length]}
	start := off + length
	// The string set ends at the first pair of NULs: the last string's and
	// the set's own, or the two that follow a structure without strings.
	end := bytes.Index(table[start:], []byte{0, 0})
	if end < 0 {
		return smbiosStructure{}, 0, fmt.Errorf("SMBIOS structure at offset %d (type %d) is truncated: its string set has no terminating double NUL before the end of the table", off, typ)
	}
	if end > 0 {
		if table[start] == 0 {
			return smbiosStructure{}, 0, fmt.Errorf("SMBIOS structure at offset %d (type %d): its string set begins with a single NUL", off, typ)
		}
		s.strings = bytes.Split(table[start:start+end], []byte{0})
	}
	return s, start + end + 2, nil
}

// SystemSerialNumber returns the Serial Number of the first System
// Information (type 1) structure of raw, the RawSMBIOSData that
// GetSystemFirmwareTable('RSMB', 0, ...) returns: the value Win32_BIOS
// reports as SerialNumber. Spaces around it are trimmed, bytes that are not
// UTF-8 become U+FFFD, and a serial number that is no string (0) is "".
// Truncated or malformed structures up to that one are errors, as is a
// table without one.
func SystemSerialNumber(raw []byte) (string, error) {
	table, err := smbiosTable(raw)
	if err != nil {
		return "", err
	}
	s, found, err := findSMBIOSStructure(table, smbiosTypeSystemInformation)
	if err != nil {
		return "", err
	}
	if !found {
		return "", errNoSystemInformation
	}
	if len(s.formatted) <= systemSerialNumberOffset {
		return "", fmt.Errorf("SMBIOS System Information structure at offset %d: its Length %d is too short to hold the Serial Number at offset %d", s.offset, len(s.formatted), systemSerialNumberOffset)
	}
	serial, err := s.str(s.formatted[systemSerialNumberOffset])
	if err != nil {
		return "", fmt.Errorf("Serial Number: %w", err)
	}
	return strings.TrimSpace(strings.ToValidUTF8(serial, "\uFFFD")), nil
}
