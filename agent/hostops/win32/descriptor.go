package win32

import "encoding/binary"

// This file builds the STORAGE_PROPERTY_QUERY that IOCTL_STORAGE_QUERY_PROPERTY
// takes and reads the STORAGE_DEVICE_DESCRIPTOR it answers for
// StorageDeviceProperty (winioctl.h), little-endian:
//
//	STORAGE_PROPERTY_QUERY (12 bytes)   STORAGE_DEVICE_DESCRIPTOR
//	 0 STORAGE_PROPERTY_ID PropertyId    0 DWORD   Version
//	 4 STORAGE_QUERY_TYPE  QueryType     4 DWORD   Size
//	 8 BYTE AdditionalParameters[1]      8 BYTE    DeviceType
//	                                     9 BYTE    DeviceTypeModifier
//	                                    10 BOOLEAN RemovableMedia
//	                                    11 BOOLEAN CommandQueueing
//	                                    12 DWORD   VendorIdOffset
//	                                    16 DWORD   ProductIdOffset
//	                                    20 DWORD   ProductRevisionOffset
//	                                    24 DWORD   SerialNumberOffset
//	                                    28 STORAGE_BUS_TYPE BusType
//	                                    32 DWORD   RawPropertiesLength
//	                                    36 BYTE    RawDeviceProperties[]
//
// The four offsets count from the start of the descriptor to a
// NUL-terminated ASCII string within Size; 0 means the device has none.

// STORAGE_PROPERTY_ID and STORAGE_QUERY_TYPE values.
const (
	StorageDeviceProperty   = 0
	StorageDeviceIdProperty = 2
	PropertyStandardQuery   = 0
)

// Sizes of the structures.
const (
	// StoragePropertyQuerySize is sizeof(STORAGE_PROPERTY_QUERY), padding
	// included.
	StoragePropertyQuerySize = 12
	// storageDeviceDescriptorFixed is the fixed part of the descriptor,
	// up to RawDeviceProperties.
	storageDeviceDescriptorFixed = 36
	// StorageDescriptorHeaderSize is sizeof(STORAGE_DESCRIPTOR_HEADER):
	// Version and Size, which every descriptor starts with.
	StorageDescriptorHeaderSize = 8
)

// StoragePropertyQuery returns the STORAGE_PROPERTY_QUERY asking for
// property (StorageDeviceProperty, StorageDeviceIdProperty) with
// queryType (PropertyStandardQuery), the input of
// IOCTL_STORAGE_QUERY_PROPERTY.
func StoragePropertyQuery(property, queryType uint32) []byte {
	b := make([]byte, StoragePropertyQuerySize)
	binary.LittleEndian.PutUint32(b[0:], property)
	binary.LittleEndian.PutUint32(b[4:], queryType)
	return b
}

// DescriptorSize reads the Size of the STORAGE_DESCRIPTOR_HEADER every
// storage descriptor starts with: the bytes the whole descriptor takes,
// which may be more than an output buffer held.
func DescriptorSize(b []byte) (uint32, error) {
	if len(b) < StorageDescriptorHeaderSize {
		return 0, layoutFault("STORAGE_DESCRIPTOR_HEADER", "Size", 4, "%d bytes were returned, the header takes %d (truncated answer)", len(b), StorageDescriptorHeaderSize)
	}
	return u32(b, 4), nil
}

// StorageDeviceDescriptor is a STORAGE_DEVICE_DESCRIPTOR; the strings are
// "" where the device gives none.
type StorageDeviceDescriptor struct {
	Version, Size      uint32
	DeviceType         uint8
	DeviceTypeModifier uint8
	RemovableMedia     bool
	CommandQueueing    bool
	VendorId           string
	ProductId          string
	ProductRevision    string
	SerialNumber       string
	BusType            StorageBusType
}

// StorageDeviceIdentity is what the disk listings read of a
// STORAGE_DEVICE_DESCRIPTOR: its bus type and serial number. The vendor,
// product and revision strings are not read at all, so a byte in them that
// is not printable ASCII does not matter.
type StorageDeviceIdentity struct {
	BusType      StorageBusType
	SerialNumber string
}

// ParseStorageDeviceIdentity reads the BusType and the serial number of
// the STORAGE_DEVICE_DESCRIPTOR in b, with the checks of
// ParseStorageDeviceDescriptor on Size and on the serial number's offset
// and string, and none on the other strings.
func ParseStorageDeviceIdentity(b []byte) (StorageDeviceIdentity, error) {
	desc, err := storageDeviceDescriptorBytes(b)
	if err != nil {
		return StorageDeviceIdentity{}, err
	}
	serial, err := descriptorString(desc, "SerialNumberOffset", 24)
	if err != nil {
		return StorageDeviceIdentity{}, err
	}
	return StorageDeviceIdentity{BusType: StorageBusType(u32(desc, 28)), SerialNumber: serial}, nil
}

// storageDeviceDescriptorBytes checks the Size of the descriptor in b and
// returns b cut to it.
func storageDeviceDescriptorBytes(b []byte) ([]byte, error) {
	const name = "STORAGE_DEVICE_DESCRIPTOR"
	size, err := DescriptorSize(b)
	if err != nil {
		return nil, err
	}
	if size < storageDeviceDescriptorFixed {
		return nil, layoutFault(name, "Size", 4, "%d is less than the %d bytes of the fixed part", size, storageDeviceDescriptorFixed)
	}
	if uint64(size) > uint64(len(b)) {
		return nil, layoutFault(name, "Size", 4, "%d exceeds the %d bytes returned (truncated answer)", size, len(b))
	}
	return b[:size], nil
}

// ParseStorageDeviceDescriptor reads the STORAGE_DEVICE_DESCRIPTOR in b,
// the answer to IOCTL_STORAGE_QUERY_PROPERTY for StorageDeviceProperty.
// Size must cover the fixed part and lie within b (a descriptor cut short
// by a small buffer is an error: ask again with Size bytes), and each
// string offset must lead past the fixed part to printable ASCII ended by
// a NUL within Size. An offset of 0 (or 0xFFFFFFFF, which some drivers
// write) means no string. Bytes beyond Size are ignored.
func ParseStorageDeviceDescriptor(b []byte) (StorageDeviceDescriptor, error) {
	desc, err := storageDeviceDescriptorBytes(b)
	if err != nil {
		return StorageDeviceDescriptor{}, err
	}
	d := StorageDeviceDescriptor{
		Version: u32(desc, 0), Size: uint32(len(desc)),
		DeviceType: desc[8], DeviceTypeModifier: desc[9],
		RemovableMedia: desc[10] != 0, CommandQueueing: desc[11] != 0,
		BusType: StorageBusType(u32(desc, 28)),
	}
	for _, f := range []struct {
		field string
		at    int
		into  *string
	}{
		{"VendorIdOffset", 12, &d.VendorId},
		{"ProductIdOffset", 16, &d.ProductId},
		{"ProductRevisionOffset", 20, &d.ProductRevision},
		{"SerialNumberOffset", 24, &d.SerialNumber},
	} {
		s, err := descriptorString(desc, f.field, f.at)
		if err != nil {
			return StorageDeviceDescriptor{}, err
		}
		*f.into = s
	}
	return d, nil
}

// descriptorString reads the string whose offset is the DWORD at at.
func descriptorString(desc []byte, field string, at int) (string, error) {
	const name = "STORAGE_DEVICE_DESCRIPTOR"
	off := u32(desc, at)
	if off == 0 || off == 0xFFFFFFFF {
		return "", nil
	}
	if off < storageDeviceDescriptorFixed {
		return "", layoutFault(name, field, at, "%d points into the %d-byte fixed part", off, storageDeviceDescriptorFixed)
	}
	if uint64(off) >= uint64(len(desc)) {
		return "", layoutFault(name, field, at, "%d is past Size %d", off, len(desc))
	}
	for i, c := range desc[off:] {
		if c == 0 {
			return string(desc[off : int(off)+i]), nil
		}
		if c < 0x20 || c > 0x7e {
			return "", layoutFault(name, field, at, "the string at %d holds byte 0x%02x at %d, which is not printable ASCII", off, c, int(off)+i)
		}
	}
	return "", layoutFault(name, field, at, "the string at %d has no NUL before Size %d", off, len(desc))
}
