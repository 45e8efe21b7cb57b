package disk

import (
	"encoding/binary"
	"encoding/hex"
	"fmt"
)

// This file reads the answer Windows gives to IOCTL_STORAGE_QUERY_PROPERTY
// for StorageDeviceIdProperty: a STORAGE_DEVICE_ID_DESCRIPTOR holding the
// identification descriptors of the disk's SCSI vital product data page 0x83,
// each as a STORAGE_IDENTIFIER. The layouts are those of ntddstor.h and
// winioctl.h, little-endian:
//
//	STORAGE_DEVICE_ID_DESCRIPTOR       STORAGE_IDENTIFIER (from its own start)
//	 0 ULONG Version                    0 STORAGE_IDENTIFIER_CODE_SET CodeSet
//	 4 ULONG Size                       4 STORAGE_IDENTIFIER_TYPE     Type
//	 8 ULONG NumberOfIdentifiers        8 USHORT                      IdentifierSize
//	12 UCHAR Identifiers[]             10 USHORT                      NextOffset
//	                                   12 STORAGE_ASSOCIATION_TYPE    Association
//	                                   16 UCHAR                       Identifier[]
//
// NextOffset counts from the start of its own STORAGE_IDENTIFIER to the start
// of the next one.
//
// The page 83 ID CSI Proxy reports (GetDiskPage83ID in its pkg/os/disk) is
// the first identifier, in descriptor order, whose Association is
// StorageIdAssocDevice and whose CodeSet is StorageIdCodeSetBinary or
// StorageIdCodeSetAscii, whatever its Type: a binary one as lower-case hex,
// an ASCII one as its bytes unchanged (no trimming of spaces or NULs). With
// no such identifier the ID is empty, and that is no error; a NextOffset of
// 0 ends the walk (CSI Proxy reads the same identifier again until
// NumberOfIdentifiers is spent), so the ID is then the one found before it,
// or empty. Page83ID and
// StorageDeviceIdDescriptor.Page83ID give that string.

// Sizes of the fixed parts of the two structures.
const (
	storageDeviceIdDescriptorHeaderSize = 12
	storageIdentifierHeaderSize         = 16
)

// StorageIdentifierCodeSet is STORAGE_IDENTIFIER_CODE_SET.
type StorageIdentifierCodeSet uint32

// The STORAGE_IDENTIFIER_CODE_SET values.
const (
	StorageIdCodeSetReserved StorageIdentifierCodeSet = 0
	StorageIdCodeSetBinary   StorageIdentifierCodeSet = 1
	StorageIdCodeSetAscii    StorageIdentifierCodeSet = 2
	StorageIdCodeSetUtf8     StorageIdentifierCodeSet = 3
)

// StorageIdentifierType is STORAGE_IDENTIFIER_TYPE.
type StorageIdentifierType uint32

// The STORAGE_IDENTIFIER_TYPE values. StorageIdTypeFCPHName is the SCSI NAA
// designator.
const (
	StorageIdTypeVendorSpecific           StorageIdentifierType = 0
	StorageIdTypeVendorId                 StorageIdentifierType = 1
	StorageIdTypeEUI64                    StorageIdentifierType = 2
	StorageIdTypeFCPHName                 StorageIdentifierType = 3
	StorageIdTypePortRelative             StorageIdentifierType = 4
	StorageIdTypeTargetPortGroup          StorageIdentifierType = 5
	StorageIdTypeLogicalUnitGroup         StorageIdentifierType = 6
	StorageIdTypeMD5LogicalUnitIdentifier StorageIdentifierType = 7
	StorageIdTypeScsiNameString           StorageIdentifierType = 8
)

// StorageAssociationType is STORAGE_ASSOCIATION_TYPE.
type StorageAssociationType uint32

// The STORAGE_ASSOCIATION_TYPE values.
const (
	StorageIdAssocDevice StorageAssociationType = 0
	StorageIdAssocPort   StorageAssociationType = 1
	StorageIdAssocTarget StorageAssociationType = 2
)

// StorageIdentifier is one STORAGE_IDENTIFIER of a descriptor.
type StorageIdentifier struct {
	CodeSet     StorageIdentifierCodeSet
	Type        StorageIdentifierType
	Association StorageAssociationType
	// Offset is where the STORAGE_IDENTIFIER starts, in bytes from the
	// start of the STORAGE_DEVICE_ID_DESCRIPTOR; Identifier was read from
	// Offset+16.
	Offset int
	// Identifier holds IdentifierSize bytes, copied from the descriptor.
	Identifier []byte
}

// Page83ID is the identifier formatted as CSI Proxy formats it: lower-case
// hex for StorageIdCodeSetBinary, the bytes unchanged for
// StorageIdCodeSetAscii. ok is false for the other code sets, which CSI
// Proxy never reports.
func (id StorageIdentifier) Page83ID() (s string, ok bool) {
	switch id.CodeSet {
	case StorageIdCodeSetBinary:
		return hex.EncodeToString(id.Identifier), true
	case StorageIdCodeSetAscii:
		return string(id.Identifier), true
	}
	return "", false
}

// reportedByCSIProxy tells whether CSI Proxy takes id as the disk's page 83
// ID when it is the first such identifier of the descriptor.
func (id StorageIdentifier) reportedByCSIProxy() bool {
	return id.Association == StorageIdAssocDevice &&
		(id.CodeSet == StorageIdCodeSetBinary || id.CodeSet == StorageIdCodeSetAscii)
}

// StorageDeviceIdDescriptor is a parsed STORAGE_DEVICE_ID_DESCRIPTOR.
type StorageDeviceIdDescriptor struct {
	Version uint32
	Size    uint32
	// Identifiers are the descriptor's STORAGE_IDENTIFIER structures in
	// order; their number is the descriptor's NumberOfIdentifiers.
	Identifiers []StorageIdentifier
}

// Page83Identifier returns the identifier CSI Proxy reports as the disk's
// page 83 ID: the first whose Association is StorageIdAssocDevice and whose
// CodeSet is binary or ASCII. ok is false when there is none.
func (d StorageDeviceIdDescriptor) Page83Identifier() (id StorageIdentifier, ok bool) {
	for _, id := range d.Identifiers {
		if id.reportedByCSIProxy() {
			return id, true
		}
	}
	return StorageIdentifier{}, false
}

// Page83ID returns the page 83 ID as CSI Proxy reports it; empty when no
// identifier qualifies.
func (d StorageDeviceIdDescriptor) Page83ID() string {
	id, ok := d.Page83Identifier()
	if !ok {
		return ""
	}
	s, _ := id.Page83ID()
	return s
}

// Page83Error is a fault in a STORAGE_DEVICE_ID_DESCRIPTOR: the field at
// Offset (bytes from the start of the descriptor) and what is wrong with it.
type Page83Error struct {
	Field  string
	Offset int
	Reason string
}

func (e *Page83Error) Error() string {
	return fmt.Sprintf("STORAGE_DEVICE_ID_DESCRIPTOR: %s at offset %d: %s", e.Field, e.Offset, e.Reason)
}

func fault(field string, offset int, format string, args ...any) error {
	return &Page83Error{Field: field, Offset: offset, Reason: fmt.Sprintf(format, args...)}
}

// ParsePage83 parses buf, the output of IOCTL_STORAGE_QUERY_PROPERTY for
// StorageDeviceIdProperty, and returns every identifier it holds. Every
// field is checked against the bytes there are: a descriptor whose Size
// exceeds buf, whose NumberOfIdentifiers cannot fit in Size, or whose
// identifiers (IdentifierSize, NextOffset) reach past Size or overlap is an
// error, a *Page83Error naming the field and its offset. A NextOffset of 0
// ends the identifiers there, fewer than NumberOfIdentifiers: CSI Proxy
// then reads the same identifier again for every count that remains, so no
// other is ever reported. Bytes of buf beyond Size are ignored. On error the descriptor returned
// holds the identifiers read before the fault.
func ParsePage83(buf []byte) (StorageDeviceIdDescriptor, error) {
	var d StorageDeviceIdDescriptor
	h, err := readHeader(buf)
	if err != nil {
		return d, err
	}
	d.Version, d.Size = h.version, h.size
	// Every identifier takes at least its 16-byte header, so Size bounds
	// their number; this also bounds the work done for any input.
	if limit := (int(h.size) - storageDeviceIdDescriptorHeaderSize) / storageIdentifierHeaderSize; int64(h.count) > int64(limit) {
		return d, fault("NumberOfIdentifiers", 8, "%d identifiers cannot fit in Size %d (at most %d)", h.count, h.size, limit)
	}
	d.Identifiers = make([]StorageIdentifier, 0, h.count)
	err = walk(buf[:h.size], h.count, func(id StorageIdentifier) bool {
		d.Identifiers = append(d.Identifiers, id)
		return true
	})
	return d, err
}

// Page83ID returns the page 83 ID CSI Proxy reports for the descriptor in
// buf (see ParsePage83 for buf). As CSI Proxy does, it reads identifiers
// only up to the first that qualifies, so a fault in later ones does not
// matter; a fault before it is an error. No qualifying identifier gives ""
// and no error.
func Page83ID(buf []byte) (string, error) {
	h, err := readHeader(buf)
	if err != nil {
		return "", err
	}
	var found StorageIdentifier
	var ok bool
	err = walk(buf[:h.size], h.count, func(id StorageIdentifier) bool {
		if id.reportedByCSIProxy() {
			found, ok = id, true
			return false
		}
		return true
	})
	if err != nil {
		return "", err
	}
	if !ok {
		return "", nil
	}
	s, _ := found.Page83ID()
	return s, nil
}

type descriptorHeader struct {
	version, size, count uint32
}

// readHeader reads the fixed part of the descriptor and checks Size against
// buf. The returned size may be sliced from buf.
func readHeader(buf []byte) (descriptorHeader, error) {
	if len(buf) < storageDeviceIdDescriptorHeaderSize {
		return descriptorHeader{}, fault("header", 0, "%d bytes, the fixed part takes %d", len(buf), storageDeviceIdDescriptorHeaderSize)
	}
	h := descriptorHeader{
		version: binary.LittleEndian.Uint32(buf[0:]),
		size:    binary.LittleEndian.Uint32(buf[4:]),
		count:   binary.LittleEndian.Uint32(buf[8:]),
	}
	if h.size < storageDeviceIdDescriptorHeaderSize {
		return h, fault("Size", 4, "%d is less than the %d bytes of the fixed part", h.size, storageDeviceIdDescriptorHeaderSize)
	}
	if uint64(h.size) > uint64(len(buf)) {
		return h, fault("Size", 4, "%d exceeds the %d bytes read (truncated descriptor)", h.size, len(buf))
	}
	return h, nil
}

// walk visits the count identifiers of desc (the descriptor cut to its
// Size) in order until visit returns false. Each step advances by at least
// one identifier header, so it ends within len(desc)/16 steps whatever the
// fields say.
func walk(desc []byte, count uint32, visit func(StorageIdentifier) bool) error {
	off := storageDeviceIdDescriptorHeaderSize
	for i := uint32(0); i < count; i++ {
		if len(desc)-off < storageIdentifierHeaderSize {
			return fault(fmt.Sprintf("STORAGE_IDENTIFIER %d", i), off,
				"its %d-byte header runs past Size %d (NumberOfIdentifiers is %d)", storageIdentifierHeaderSize, len(desc), count)
		}
		size := int(binary.LittleEndian.Uint16(desc[off+8:]))
		next := int(binary.LittleEndian.Uint16(desc[off+10:]))
		start := off + storageIdentifierHeaderSize
		if size > len(desc)-start {
			return fault(fmt.Sprintf("STORAGE_IDENTIFIER %d IdentifierSize", i), off+8,
				"%d bytes from offset %d run past Size %d", size, start, len(desc))
		}
		id := StorageIdentifier{
			CodeSet:     StorageIdentifierCodeSet(binary.LittleEndian.Uint32(desc[off:])),
			Type:        StorageIdentifierType(binary.LittleEndian.Uint32(desc[off+4:])),
			Association: StorageAssociationType(binary.LittleEndian.Uint32(desc[off+12:])),
			Offset:      off,
			Identifier:  append([]byte(nil), desc[start:start+size]...),
		}
		if !visit(id) {
			return nil
		}
		if i == count-1 {
			// The last NextOffset is never followed.
			break
		}
		switch {
		case next == 0:
			// CSI Proxy reads this same identifier again for each count
			// that remains, and it did not qualify: the walk ends here.
			return nil
		case next < storageIdentifierHeaderSize+size:
			return fault(fmt.Sprintf("STORAGE_IDENTIFIER %d NextOffset", i), off+10,
				"%d overlaps this identifier's %d bytes", next, storageIdentifierHeaderSize+size)
		case next > len(desc)-off:
			return fault(fmt.Sprintf("STORAGE_IDENTIFIER %d NextOffset", i), off+10,
				"%d leads to offset %d, past Size %d", next, off+next, len(desc))
		}
		off += next
	}
	return nil
}
