package win32test

import (
	"encoding/binary"

	"github.com/pipeguard/pipeguard/agent/hostops/win32"
)

// DeviceIoControl answers the IOCTLs of the volume and disk operations for
// the host's volumes (by VolumeDevice) and disks (\\.\PhysicalDriveN), as
// Windows would for an output buffer of outSize bytes: a fixed structure
// that does not fit is ERROR_INSUFFICIENT_BUFFER; extents that do not fit
// are ERROR_MORE_DATA with the first 32 bytes (NumberOfDiskExtents and the
// first extent); a descriptor is cut to the buffer, its Size telling how
// large it is. An answer set with Answer comes first; an unknown device is
// ERROR_FILE_NOT_FOUND from CreateFileW, an unknown code on a known device
// ERROR_INVALID_FUNCTION.
func (h *Host) DeviceIoControl(device string, code uint32, in []byte, outSize int) ([]byte, error) {
	fn := win32.DeviceIoControlFunc(code)
	if err := h.begin(fn, device); err != nil {
		return nil, err
	}
	h.mu.Lock()
	canned, isCanned := h.answers[answerKey{fold(device), code}]
	var vol *Volume
	if v, ok := h.volumes[fold(device)]; ok {
		c := *v
		vol = &c
	}
	disk, isDisk := Disk{}, false
	if n, ok := physicalDrive(device); ok {
		disk, isDisk = h.disks[n]
	}
	h.mu.Unlock()
	if outSize < 0 {
		return nil, Fail(fn, device, ErrInvalidParameter)
	}
	switch {
	case isCanned:
		return canned.out[:min(len(canned.out), outSize)], canned.err
	case vol != nil:
		return volumeIoctl(fn, device, code, *vol, outSize)
	case isDisk:
		return diskIoctl(fn, device, code, disk, in, outSize)
	case h.Real != nil:
		return h.Real.DeviceIoControl(device, code, in, outSize)
	}
	return nil, Fail("CreateFileW", device, ErrFileNotFound)
}

func volumeIoctl(fn, device string, code uint32, v Volume, outSize int) ([]byte, error) {
	switch code {
	case win32.IOCTL_VOLUME_GET_VOLUME_DISK_EXTENTS:
		out := VolumeDiskExtents(v.Extents...)
		switch {
		case outSize < win32.VolumeDiskExtentsSize:
			return nil, Fail(fn, device, ErrInsufficientBuf)
		case outSize < len(out):
			return out[:win32.VolumeDiskExtentsSize], Fail(fn, device, ErrMoreData)
		}
		return out, nil
	case win32.IOCTL_STORAGE_GET_DEVICE_NUMBER:
		if len(v.Extents) != 1 {
			return nil, Fail(fn, device, ErrInvalidFunction)
		}
		return fixed(fn, device, outSize, StorageDeviceNumber(win32.StorageDeviceNumber{
			DeviceType: win32.FILE_DEVICE_DISK, DeviceNumber: v.Extents[0].DiskNumber, PartitionNumber: v.PartitionNumber}))
	case win32.IOCTL_DISK_GET_LENGTH_INFO:
		return fixed(fn, device, outSize, LengthInformation(int64(v.Total)))
	}
	return nil, Fail(fn, device, ErrInvalidFunction)
}

func diskIoctl(fn, device string, code uint32, d Disk, in []byte, outSize int) ([]byte, error) {
	switch code {
	case win32.IOCTL_SCSI_GET_ADDRESS:
		if d.SCSI == nil {
			return nil, Fail(fn, device, ErrInvalidFunction)
		}
		return fixed(fn, device, outSize, SCSIAddress(*d.SCSI))
	case win32.IOCTL_DISK_GET_LENGTH_INFO:
		return fixed(fn, device, outSize, LengthInformation(d.Size))
	case win32.IOCTL_STORAGE_GET_DEVICE_NUMBER:
		return fixed(fn, device, outSize, StorageDeviceNumber(win32.StorageDeviceNumber{DeviceType: win32.FILE_DEVICE_DISK, DeviceNumber: d.Number}))
	case win32.IOCTL_STORAGE_QUERY_PROPERTY:
		if len(in) < 8 || binary.LittleEndian.Uint32(in[4:]) != win32.PropertyStandardQuery {
			return nil, Fail(fn, device, ErrInvalidParameter)
		}
		var out []byte
		switch binary.LittleEndian.Uint32(in) {
		case win32.StorageDeviceProperty:
			bus := d.Bus
			if bus == win32.BusTypeUnknown && d.SCSI != nil {
				bus = win32.BusTypeScsi
			}
			out = StorageDeviceDescriptor(win32.StorageDeviceDescriptor{DeviceType: 0, BusType: bus, VendorId: d.Vendor, ProductId: d.Product, SerialNumber: d.Serial})
		case win32.StorageDeviceIdProperty:
			if d.Page83 == nil {
				return nil, Fail(fn, device, ErrNotSupported)
			}
			out = d.Page83
		default:
			return nil, Fail(fn, device, ErrNotSupported)
		}
		if outSize < win32.StorageDescriptorHeaderSize {
			return nil, Fail(fn, device, ErrInsufficientBuf)
		}
		return append([]byte(nil), out[:min(len(out), outSize)]...), nil
	}
	return nil, Fail(fn, device, ErrInvalidFunction)
}

// fixed answers a fixed-size structure.
func fixed(fn, device string, outSize int, out []byte) ([]byte, error) {
	if outSize < len(out) {
		return nil, Fail(fn, device, ErrInsufficientBuf)
	}
	return out, nil
}
