package disk

import (
	"encoding/binary"
	"errors"
	"fmt"
	"strconv"
	"unsafe"

	"golang.org/x/sys/windows"
)

// IOCTL_STORAGE_QUERY_PROPERTY is CTL_CODE(IOCTL_STORAGE_BASE, 0x0500,
// METHOD_BUFFERED, FILE_ANY_ACCESS): it needs no access rights on the handle.
const ioctlStorageQueryProperty = 0x002d1400

// STORAGE_PROPERTY_ID and STORAGE_QUERY_TYPE values used here.
const (
	storageDeviceIdProperty = 2
	propertyStandardQuery   = 0
)

// storagePropertyQuery is STORAGE_PROPERTY_QUERY: PropertyId, QueryType and
// AdditionalParameters[1], 12 bytes with its padding, as in C.
type storagePropertyQuery struct {
	PropertyId           uint32
	QueryType            uint32
	AdditionalParameters [1]byte
}

// maxStorageDeviceIdDescriptor bounds the buffer a descriptor's Size may
// ask for. Page 0x83 holds at most 64 KiB of designators of at least 4 bytes
// each; as STORAGE_IDENTIFIER structures they grow by at most 16 bytes each,
// which stays under this bound.
const maxStorageDeviceIdDescriptor = 1 << 20

// QueryStorageDeviceIdDescriptor returns the STORAGE_DEVICE_ID_DESCRIPTOR of
// \\.\PhysicalDrive<disk>, as IOCTL_STORAGE_QUERY_PROPERTY with
// StorageDeviceIdProperty answers it, for ParsePage83 and Page83ID. The disk
// is opened with no access rights, for queries only. The first call uses
// 4 KiB, as CSI Proxy does; when the descriptor's Size says it is larger,
// the call is repeated with that size.
//
// It is not yet used by ListDiskIDs, which reports Get-Disk's UniqueId, and
// it has not been run on Windows.
func QueryStorageDeviceIdDescriptor(disk uint32) ([]byte, error) {
	path := `\\.\PhysicalDrive` + strconv.FormatUint(uint64(disk), 10)
	name, err := windows.UTF16PtrFromString(path)
	if err != nil {
		return nil, err
	}
	h, err := windows.CreateFile(name, 0, windows.FILE_SHARE_READ|windows.FILE_SHARE_WRITE, nil, windows.OPEN_EXISTING, 0, 0)
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", path, err)
	}
	defer windows.CloseHandle(h)

	query := storagePropertyQuery{PropertyId: storageDeviceIdProperty, QueryType: propertyStandardQuery}
	size := 4 << 10
	for range 4 {
		buf := make([]byte, size)
		var n uint32
		err := windows.DeviceIoControl(h, ioctlStorageQueryProperty,
			(*byte)(unsafe.Pointer(&query)), uint32(unsafe.Sizeof(query)),
			&buf[0], uint32(len(buf)), &n, nil)
		short := errors.Is(err, windows.ERROR_MORE_DATA) || errors.Is(err, windows.ERROR_INSUFFICIENT_BUFFER)
		if err != nil && !short {
			return nil, fmt.Errorf("IOCTL_STORAGE_QUERY_PROPERTY StorageDeviceIdProperty on %s: %w", path, err)
		}
		if n < 8 || int(n) > len(buf) {
			return nil, fmt.Errorf("IOCTL_STORAGE_QUERY_PROPERTY StorageDeviceIdProperty on %s: %d bytes returned (%v)", path, n, err)
		}
		want := binary.LittleEndian.Uint32(buf[4:])
		if want <= n {
			return buf[:n], nil
		}
		if want > maxStorageDeviceIdDescriptor {
			return nil, fmt.Errorf("IOCTL_STORAGE_QUERY_PROPERTY StorageDeviceIdProperty on %s: descriptor Size %d exceeds %d", path, want, maxStorageDeviceIdDescriptor)
		}
		if int(want) <= size {
			// The buffer was large enough but fewer bytes came back:
			// ParsePage83 reports the truncation.
			return buf[:n], nil
		}
		size = int(want)
	}
	return nil, fmt.Errorf("IOCTL_STORAGE_QUERY_PROPERTY StorageDeviceIdProperty on %s: descriptor Size kept growing", path)
}

// QueryPage83ID returns the page 83 ID of \\.\PhysicalDrive<disk> as CSI
// Proxy's ListDiskIDs reports it (see Page83ID). It is not yet used by
// ListDiskIDs and has not been run on Windows.
func QueryPage83ID(disk uint32) (string, error) {
	buf, err := QueryStorageDeviceIdDescriptor(disk)
	if err != nil {
		return "", err
	}
	id, err := Page83ID(buf)
	if err != nil {
		return "", fmt.Errorf(`\\.\PhysicalDrive%d: %w`, disk, err)
	}
	return id, nil
}
