package win32

import (
	"strings"
	"unicode/utf16"
)

// This file reads the REPARSE_DATA_BUFFER that FSCTL_GET_REPARSE_POINT
// answers (ntifs.h), little-endian:
//
//	 0 ULONG  ReparseTag
//	 4 USHORT ReparseDataLength     (bytes after this 8-byte header)
//	 6 USHORT Reserved
//	 8 USHORT SubstituteNameOffset  (both buffers)
//	10 USHORT SubstituteNameLength
//	12 USHORT PrintNameOffset
//	14 USHORT PrintNameLength
//	16 ULONG  Flags                 (SymbolicLinkReparseBuffer only)
//	16 WCHAR  PathBuffer[]          (MountPointReparseBuffer)
//	20 WCHAR  PathBuffer[]          (SymbolicLinkReparseBuffer)
//
// Name offsets and lengths are in bytes from the start of PathBuffer, and
// the names are UTF-16 without their NUL.

// Reparse tags (winnt.h) and symbolic link flags.
const (
	// IO_REPARSE_TAG_MOUNT_POINT is a volume mount point or a junction.
	IO_REPARSE_TAG_MOUNT_POINT uint32 = 0xA0000003
	// IO_REPARSE_TAG_SYMLINK is a symbolic link.
	IO_REPARSE_TAG_SYMLINK uint32 = 0xA000000C
	// SYMLINK_FLAG_RELATIVE marks a symbolic link whose substitute name
	// is relative to the link's folder.
	SYMLINK_FLAG_RELATIVE uint32 = 0x1
)

// MaximumReparseDataBufferSize is MAXIMUM_REPARSE_DATA_BUFFER_SIZE, the
// largest REPARSE_DATA_BUFFER there is.
const MaximumReparseDataBufferSize = 16 * 1024

// ReparsePoint is a parsed REPARSE_DATA_BUFFER. The names and Flags are
// read for mount points (and junctions) and symbolic links only; for
// other tags only Tag is set.
type ReparsePoint struct {
	Tag uint32
	// SubstituteName is the target as Windows follows it, e.g.
	// \??\Volume{GUID}\ or \??\C:\dir; never empty.
	SubstituteName string
	// PrintName is the target as shown to users; it may be empty.
	PrintName string
	// Flags are the symbolic link's flags (SYMLINK_FLAG_RELATIVE).
	Flags uint32
}

// ParseReparsePoint reads the REPARSE_DATA_BUFFER in b. ReparseDataLength
// must lie within b and hold the buffer's fixed fields; each name must lie
// within the path buffer, at an even offset and of an even length, and be
// well-formed UTF-16 without a NUL; the substitute name may not be empty.
// Bytes beyond the data length are ignored.
func ParseReparsePoint(b []byte) (ReparsePoint, error) {
	const name = "REPARSE_DATA_BUFFER"
	if len(b) < 8 {
		return ReparsePoint{}, layoutFault(name, "header", 0, "%d bytes were returned, the header takes 8 (truncated answer)", len(b))
	}
	rp := ReparsePoint{Tag: u32(b, 0)}
	end := 8 + int(u16(b, 4))
	if end > len(b) {
		return ReparsePoint{}, layoutFault(name, "ReparseDataLength", 4, "%d bytes of data after the header exceed the %d returned", end-8, len(b)-8)
	}
	var pathBuffer int
	switch rp.Tag {
	case IO_REPARSE_TAG_MOUNT_POINT:
		pathBuffer = 16
	case IO_REPARSE_TAG_SYMLINK:
		pathBuffer = 20
	default:
		return rp, nil
	}
	if end < pathBuffer {
		return ReparsePoint{}, layoutFault(name, "ReparseDataLength", 4, "%d bytes cannot hold the %d bytes of fields before PathBuffer", end-8, pathBuffer-8)
	}
	if rp.Tag == IO_REPARSE_TAG_SYMLINK {
		rp.Flags = u32(b, 16)
	}
	path := b[pathBuffer:end]
	var err error
	if rp.SubstituteName, err = reparseName(path, b, "SubstituteName", 8); err != nil {
		return ReparsePoint{}, err
	}
	if rp.SubstituteName == "" {
		return ReparsePoint{}, layoutFault(name, "SubstituteNameLength", 10, "is 0: the reparse point names no target")
	}
	if rp.PrintName, err = reparseName(path, b, "PrintName", 12); err != nil {
		return ReparsePoint{}, err
	}
	return rp, nil
}

// reparseName reads the name whose offset and length are the USHORTs at
// at and at+2 of b, from path, the PathBuffer.
func reparseName(path, b []byte, field string, at int) (string, error) {
	const name = "REPARSE_DATA_BUFFER"
	off, n := int(u16(b, at)), int(u16(b, at+2))
	switch {
	case off%2 != 0:
		return "", layoutFault(name, field+"Offset", at, "%d is odd: UTF-16 names start at even offsets", off)
	case n%2 != 0:
		return "", layoutFault(name, field+"Length", at+2, "%d is odd: UTF-16 names take whole 2-byte units", n)
	case off+n > len(path):
		return "", layoutFault(name, field+"Offset", at, "%d bytes from offset %d run past the %d-byte PathBuffer", n, off, len(path))
	}
	units := make([]uint16, n/2)
	for i := range units {
		units[i] = u16(path, off+2*i)
	}
	s, why := strictUTF16(units)
	if why != "" {
		return "", layoutFault(name, field+"Offset", at, "the name at %d %s", off, why)
	}
	return s, nil
}

// strictUTF16 decodes units, refusing what would change the name if it
// were decoded leniently: an unpaired surrogate (which would become
// U+FFFD) and a NUL (which Windows names cannot hold).
func strictUTF16(units []uint16) (string, string) {
	var sb strings.Builder
	for i := 0; i < len(units); i++ {
		u := units[i]
		switch {
		case u == 0:
			return "", "holds a NUL character"
		case utf16.IsSurrogate(rune(u)):
			if i+1 < len(units) {
				if r := utf16.DecodeRune(rune(u), rune(units[i+1])); r != '\uFFFD' {
					sb.WriteRune(r)
					i++
					continue
				}
			}
			return "", "holds an unpaired UTF-16 surrogate"
		default:
			sb.WriteRune(rune(u))
		}
	}
	return sb.String(), ""
}
