package win32

import "fmt"

// StorageBusType is STORAGE_BUS_TYPE (winioctl.h), the BusType of a
// STORAGE_DEVICE_DESCRIPTOR: the kind of bus the device is attached by.
type StorageBusType uint32

// The STORAGE_BUS_TYPE values, as winioctl.h numbers them.
const (
	BusTypeUnknown           StorageBusType = 0x00
	BusTypeScsi              StorageBusType = 0x01
	BusTypeAtapi             StorageBusType = 0x02
	BusTypeAta               StorageBusType = 0x03
	BusType1394              StorageBusType = 0x04
	BusTypeSsa               StorageBusType = 0x05
	BusTypeFibre             StorageBusType = 0x06
	BusTypeUsb               StorageBusType = 0x07
	BusTypeRAID              StorageBusType = 0x08
	BusTypeiScsi             StorageBusType = 0x09
	BusTypeSas               StorageBusType = 0x0A
	BusTypeSata              StorageBusType = 0x0B
	BusTypeSd                StorageBusType = 0x0C
	BusTypeMmc               StorageBusType = 0x0D
	BusTypeVirtual           StorageBusType = 0x0E
	BusTypeFileBackedVirtual StorageBusType = 0x0F
	BusTypeSpaces            StorageBusType = 0x10
	BusTypeNvme              StorageBusType = 0x11
	BusTypeSCM               StorageBusType = 0x12
	BusTypeUfs               StorageBusType = 0x13
	BusTypeNvmeof            StorageBusType = 0x14
)

var busTypeNames = [...]string{
	"Unknown", "SCSI", "ATAPI", "ATA", "1394", "SSA", "Fibre Channel", "USB", "RAID", "iSCSI",
	"SAS", "SATA", "SD", "MMC", "Virtual", "File Backed Virtual", "Storage Spaces", "NVMe", "SCM", "UFS", "NVMe-oF",
}

// String names the bus type as Get-Disk's BusType does; a value winioctl.h
// does not define reads "bus type 0xNN".
func (b StorageBusType) String() string {
	if int(b) < len(busTypeNames) {
		return busTypeNames[b]
	}
	return fmt.Sprintf("bus type 0x%02X", uint32(b))
}
