package win32

import (
	"encoding/binary"
	"fmt"
)

// LayoutError is a buffer that does not hold the documented structure: the
// field at Offset (bytes from the start of the buffer) and what is wrong
// with it.
type LayoutError struct {
	// Struct is the structure's name in Microsoft's documentation, e.g.
	// "VOLUME_DISK_EXTENTS".
	Struct string
	Field  string
	Offset int
	Reason string
}

func (e *LayoutError) Error() string {
	return fmt.Sprintf("%s: %s at offset %d: %s", e.Struct, e.Field, e.Offset, e.Reason)
}

func layoutFault(structName, field string, offset int, format string, args ...any) error {
	return &LayoutError{Struct: structName, Field: field, Offset: offset, Reason: fmt.Sprintf(format, args...)}
}

// needBytes checks that b holds the n bytes of a fixed-size structure.
func needBytes(structName string, b []byte, n int) error {
	if len(b) < n {
		return layoutFault(structName, "length", 0, "%d bytes were returned, the structure takes %d (truncated answer)", len(b), n)
	}
	return nil
}

func u16(b []byte, off int) uint16 { return binary.LittleEndian.Uint16(b[off:]) }
func u32(b []byte, off int) uint32 { return binary.LittleEndian.Uint32(b[off:]) }
func i64(b []byte, off int) int64  { return int64(binary.LittleEndian.Uint64(b[off:])) }

func itoa(i int) string { return fmt.Sprint(i) }
