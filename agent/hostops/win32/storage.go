package win32

// This file reads the fixed structures of winioctl.h and ntddscsi.h the
// disk and volume IOCTLs answer, little-endian:
//
//	VOLUME_DISK_EXTENTS                 DISK_EXTENT (24 bytes)
//	 0 DWORD NumberOfDiskExtents         0 DWORD         DiskNumber
//	 4 (padding: Extents is 8-aligned)   8 LARGE_INTEGER StartingOffset
//	 8 DISK_EXTENT Extents[]            16 LARGE_INTEGER ExtentLength
//
//	STORAGE_DEVICE_NUMBER (12 bytes)    SCSI_ADDRESS (8 bytes)
//	 0 DEVICE_TYPE DeviceType            0 ULONG Length (8)
//	 4 DWORD       DeviceNumber          4 UCHAR PortNumber
//	 8 DWORD       PartitionNumber       5 UCHAR PathId
//	                                     6 UCHAR TargetId
//	GET_LENGTH_INFORMATION (8 bytes)     7 UCHAR Lun
//	 0 LARGE_INTEGER Length

// Sizes of the structures.
const (
	volumeDiskExtentsHeaderSize = 8
	diskExtentSize              = 24
	// VolumeDiskExtentsSize is sizeof(VOLUME_DISK_EXTENTS), the header and
	// one extent: the least output buffer the IOCTL accepts.
	VolumeDiskExtentsSize = volumeDiskExtentsHeaderSize + diskExtentSize
	// StorageDeviceNumberSize is sizeof(STORAGE_DEVICE_NUMBER).
	StorageDeviceNumberSize = 12
	// SCSIAddressSize is sizeof(SCSI_ADDRESS).
	SCSIAddressSize = 8
	// GetLengthInformationSize is sizeof(GET_LENGTH_INFORMATION).
	GetLengthInformationSize = 8
)

// MaxDiskExtents bounds the extents a volume may report: the output buffer
// asked for a volume spanning more disks than this would be unreasonable.
const MaxDiskExtents = 4096

// VolumeDiskExtentsBufferSize is the size of a VOLUME_DISK_EXTENTS holding
// n extents (at least one, as the structure is declared).
func VolumeDiskExtentsBufferSize(n int) int {
	return volumeDiskExtentsHeaderSize + diskExtentSize*max(n, 1)
}

// DiskExtent is a DISK_EXTENT: where a volume lies on a disk.
type DiskExtent struct {
	DiskNumber     uint32
	StartingOffset int64
	ExtentLength   int64
}

// NumberOfDiskExtents reads the NumberOfDiskExtents of a VOLUME_DISK_EXTENTS,
// which a buffer that was too small (ErrBufferTooSmall) still holds: the
// number of extents to make room for.
func NumberOfDiskExtents(b []byte) (uint32, error) {
	if len(b) < 4 {
		return 0, layoutFault("VOLUME_DISK_EXTENTS", "NumberOfDiskExtents", 0, "%d bytes were returned, the field takes 4 (truncated answer)", len(b))
	}
	return u32(b, 0), nil
}

// ParseVolumeDiskExtents reads the VOLUME_DISK_EXTENTS in b, the answer to
// IOCTL_VOLUME_GET_VOLUME_DISK_EXTENTS. NumberOfDiskExtents must fit in b
// and no extent may have a negative offset or length.
func ParseVolumeDiskExtents(b []byte) ([]DiskExtent, error) {
	const name = "VOLUME_DISK_EXTENTS"
	n, err := NumberOfDiskExtents(b)
	if err != nil {
		return nil, err
	}
	if n == 0 {
		return []DiskExtent{}, nil
	}
	if have := (len(b) - volumeDiskExtentsHeaderSize) / diskExtentSize; len(b) < volumeDiskExtentsHeaderSize || uint64(n) > uint64(have) {
		return nil, layoutFault(name, "NumberOfDiskExtents", 0, "%d extents take %d bytes, %d were returned (truncated answer)",
			n, volumeDiskExtentsHeaderSize+diskExtentSize*uint64(n), len(b))
	}
	out := make([]DiskExtent, n)
	for i := range out {
		off := volumeDiskExtentsHeaderSize + i*diskExtentSize
		e := DiskExtent{DiskNumber: u32(b, off), StartingOffset: i64(b, off+8), ExtentLength: i64(b, off+16)}
		if e.StartingOffset < 0 {
			return nil, layoutFault(name, "Extents["+itoa(i)+"].StartingOffset", off+8, "%d is negative", e.StartingOffset)
		}
		if e.ExtentLength < 0 {
			return nil, layoutFault(name, "Extents["+itoa(i)+"].ExtentLength", off+16, "%d is negative", e.ExtentLength)
		}
		out[i] = e
	}
	return out, nil
}

// StorageDeviceNumber is a STORAGE_DEVICE_NUMBER: the device type, the
// number of the disk and, for a partition or the volume on it, the
// partition's number (1-based; 0 for the whole disk).
type StorageDeviceNumber struct {
	DeviceType      uint32
	DeviceNumber    uint32
	PartitionNumber uint32
}

// FILE_DEVICE_DISK is the DEVICE_TYPE of a disk and its partitions.
const FILE_DEVICE_DISK = 0x07

// ParseStorageDeviceNumber reads the STORAGE_DEVICE_NUMBER in b, the
// answer to IOCTL_STORAGE_GET_DEVICE_NUMBER.
func ParseStorageDeviceNumber(b []byte) (StorageDeviceNumber, error) {
	if err := needBytes("STORAGE_DEVICE_NUMBER", b, StorageDeviceNumberSize); err != nil {
		return StorageDeviceNumber{}, err
	}
	return StorageDeviceNumber{DeviceType: u32(b, 0), DeviceNumber: u32(b, 4), PartitionNumber: u32(b, 8)}, nil
}

// SCSIAddress is a SCSI_ADDRESS: where a disk is attached. Get-Disk shows
// it as "Adapter PortNumber : Port PathId : Target TargetId : LUN Lun".
type SCSIAddress struct {
	PortNumber uint8
	PathId     uint8
	TargetId   uint8
	Lun        uint8
}

// ParseSCSIAddress reads the SCSI_ADDRESS in b, the answer to
// IOCTL_SCSI_GET_ADDRESS. Its Length must be the structure's 8 bytes: an
// address that does not say so is not trusted to name the disk.
func ParseSCSIAddress(b []byte) (SCSIAddress, error) {
	if err := needBytes("SCSI_ADDRESS", b, SCSIAddressSize); err != nil {
		return SCSIAddress{}, err
	}
	if l := u32(b, 0); l != SCSIAddressSize {
		return SCSIAddress{}, layoutFault("SCSI_ADDRESS", "Length", 0, "is %d, not the %d bytes of the structure", l, SCSIAddressSize)
	}
	return SCSIAddress{PortNumber: b[4], PathId: b[5], TargetId: b[6], Lun: b[7]}, nil
}

// ParseLengthInformation reads the GET_LENGTH_INFORMATION in b, the answer
// to IOCTL_DISK_GET_LENGTH_INFO: the size of the disk, partition or volume
// in bytes, which may not be negative.
func ParseLengthInformation(b []byte) (int64, error) {
	if err := needBytes("GET_LENGTH_INFORMATION", b, GetLengthInformationSize); err != nil {
		return 0, err
	}
	n := i64(b, 0)
	if n < 0 {
		return 0, layoutFault("GET_LENGTH_INFORMATION", "Length", 0, "%d is negative", n)
	}
	return n, nil
}
