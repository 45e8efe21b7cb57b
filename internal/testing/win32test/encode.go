package win32test

import (
	"encoding/binary"
	"unicode/utf16"

	"github.com/pipeguard/pipeguard/agent/hostops/win32"
)

// The encoders lay structures out as winioctl.h, ntddscsi.h and ntifs.h
// declare them, little-endian; see the decoders in package win32 for the
// field offsets.

// VolumeDiskExtents encodes a VOLUME_DISK_EXTENTS: NumberOfDiskExtents,
// 4 bytes of padding, then each 24-byte DISK_EXTENT. With no extents it
// still takes sizeof(VOLUME_DISK_EXTENTS), 32 bytes, as Windows answers.
func VolumeDiskExtents(extents ...win32.DiskExtent) []byte {
	b := make([]byte, win32.VolumeDiskExtentsBufferSize(len(extents)))
	binary.LittleEndian.PutUint32(b[0:], uint32(len(extents)))
	for i, e := range extents {
		off := 8 + 24*i
		binary.LittleEndian.PutUint32(b[off:], e.DiskNumber)
		binary.LittleEndian.PutUint64(b[off+8:], uint64(e.StartingOffset))
		binary.LittleEndian.PutUint64(b[off+16:], uint64(e.ExtentLength))
	}
	return b
}

// StorageDeviceNumber encodes a STORAGE_DEVICE_NUMBER.
func StorageDeviceNumber(n win32.StorageDeviceNumber) []byte {
	b := make([]byte, win32.StorageDeviceNumberSize)
	binary.LittleEndian.PutUint32(b[0:], n.DeviceType)
	binary.LittleEndian.PutUint32(b[4:], n.DeviceNumber)
	binary.LittleEndian.PutUint32(b[8:], n.PartitionNumber)
	return b
}

// SCSIAddress encodes a SCSI_ADDRESS with its Length, 8.
func SCSIAddress(a win32.SCSIAddress) []byte {
	b := make([]byte, win32.SCSIAddressSize)
	binary.LittleEndian.PutUint32(b[0:], win32.SCSIAddressSize)
	b[4], b[5], b[6], b[7] = a.PortNumber, a.PathId, a.TargetId, a.Lun
	return b
}

// LengthInformation encodes a GET_LENGTH_INFORMATION.
func LengthInformation(n int64) []byte {
	return binary.LittleEndian.AppendUint64(nil, uint64(n))
}

// StorageDeviceDescriptor encodes a STORAGE_DEVICE_DESCRIPTOR: the 40-byte
// structure (its RawDeviceProperties[1] and padding zero, RawPropertiesLength
// 0), then the vendor, product, revision and serial strings each ended by a
// NUL, in that order, their offsets set (0 for an empty one); Version and
// Size are the bytes written.
func StorageDeviceDescriptor(d win32.StorageDeviceDescriptor) []byte {
	b := make([]byte, 40)
	b[8], b[9] = d.DeviceType, d.DeviceTypeModifier
	if d.RemovableMedia {
		b[10] = 1
	}
	if d.CommandQueueing {
		b[11] = 1
	}
	binary.LittleEndian.PutUint32(b[28:], uint32(d.BusType))
	for i, s := range []string{d.VendorId, d.ProductId, d.ProductRevision, d.SerialNumber} {
		if s == "" {
			continue
		}
		binary.LittleEndian.PutUint32(b[12+4*i:], uint32(len(b)))
		b = append(append(b, s...), 0)
	}
	binary.LittleEndian.PutUint32(b[0:], uint32(len(b)))
	binary.LittleEndian.PutUint32(b[4:], uint32(len(b)))
	return b
}

// MountPointReparse encodes the REPARSE_DATA_BUFFER of a mount point or
// junction (IO_REPARSE_TAG_MOUNT_POINT): the substitute name, its NUL, the
// print name and its NUL in PathBuffer, as Windows writes them.
func MountPointReparse(substitute, print string) []byte {
	return reparse(win32.IO_REPARSE_TAG_MOUNT_POINT, nil, substitute, print)
}

// SymlinkReparse encodes the REPARSE_DATA_BUFFER of a symbolic link
// (IO_REPARSE_TAG_SYMLINK) with flags (win32.SYMLINK_FLAG_RELATIVE).
func SymlinkReparse(substitute, print string, flags uint32) []byte {
	return reparse(win32.IO_REPARSE_TAG_SYMLINK, binary.LittleEndian.AppendUint32(nil, flags), substitute, print)
}

// OtherReparse encodes a REPARSE_DATA_BUFFER of another tag holding data.
func OtherReparse(tag uint32, data []byte) []byte {
	b := binary.LittleEndian.AppendUint32(nil, tag)
	b = binary.LittleEndian.AppendUint16(b, uint16(len(data)))
	b = append(b, 0, 0)
	return append(b, data...)
}

func reparse(tag uint32, flags []byte, substitute, print string) []byte {
	sub, prn := utf16Bytes(substitute), utf16Bytes(print)
	var path []byte
	path = append(append(path, sub...), 0, 0)
	path = append(append(path, prn...), 0, 0)
	data := binary.LittleEndian.AppendUint16(nil, 0) // SubstituteNameOffset
	data = binary.LittleEndian.AppendUint16(data, uint16(len(sub)))
	data = binary.LittleEndian.AppendUint16(data, uint16(len(sub)+2))
	data = binary.LittleEndian.AppendUint16(data, uint16(len(prn)))
	data = append(data, flags...)
	return OtherReparse(tag, append(data, path...))
}

func utf16Bytes(s string) []byte {
	var b []byte
	for _, u := range utf16.Encode([]rune(s)) {
		b = binary.LittleEndian.AppendUint16(b, u)
	}
	return b
}
