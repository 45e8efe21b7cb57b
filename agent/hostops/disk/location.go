package disk

import (
	"strconv"

	"github.com/pipeguard/pipeguard/agent/hostops/win32"
)

// locationFields is what of a disk's SCSI address CSI Proxy reports for a
// bus type.
type locationFields uint8

const (
	// notListed: CSI Proxy leaves the disk out of ListDiskLocations.
	notListed locationFields = iota
	// adapterOnly: Adapter, with no Target and no LUNID.
	adapterOnly
	// adapterTargetLUN: Adapter, Target and LUNID.
	adapterTargetLUN
)

// locationRules is pipeguard's reading of the location strings the Windows
// storage provider writes in MSFT_Disk.Location, the strings CSI Proxy's
// ListDiskLocations parses, by the bus type of the disk:
//
//   - the SCSI family (a storport or SCSI port miniport: SCSI, SAS, Fibre
//     Channel, iSCSI, RAID, Virtual, File Backed Virtual, Storage Spaces,
//     NVMe, NVMe-oF, SCM, UFS) is written "<slot> : Adapter <PortNumber> :
//     Port <PathId> : Target <TargetId> : LUN <Lun>", e.g. "PCI Slot 3 :
//     Adapter 0 : Port 0 : Target 1 : LUN 0": listed with Adapter, Target
//     and LUNID;
//   - SATA is written with the controller's PCI place, Adapter and Port,
//     and no Target or LUN ("Integrated : Bus 0 : Device 31 : Function 2 :
//     Adapter 0 : Port 1"): listed with Adapter only;
//   - ATA and ATAPI (IDE) are written "PCI Slot 0 : Adapter 0 : Channel 0 :
//     Device 0", four parts, fewer than the five CSI Proxy asks for: not
//     listed;
//   - every other bus type (USB, SD, MMC, 1394, SSA, Unknown, and those
//     winioctl.h may add) has no such string: not listed.
//
// CSI Proxy never sets Bus, and ignores the Port part.
var locationRules = map[win32.StorageBusType]locationFields{
	win32.BusTypeScsi:              adapterTargetLUN,
	win32.BusTypeSas:               adapterTargetLUN,
	win32.BusTypeFibre:             adapterTargetLUN,
	win32.BusTypeiScsi:             adapterTargetLUN,
	win32.BusTypeRAID:              adapterTargetLUN,
	win32.BusTypeVirtual:           adapterTargetLUN,
	win32.BusTypeFileBackedVirtual: adapterTargetLUN,
	win32.BusTypeSpaces:            adapterTargetLUN,
	win32.BusTypeNvme:              adapterTargetLUN,
	win32.BusTypeNvmeof:            adapterTargetLUN,
	win32.BusTypeSCM:               adapterTargetLUN,
	win32.BusTypeUfs:               adapterTargetLUN,
	win32.BusTypeSata:              adapterOnly,
}

// reportedLocation returns the Location CSI Proxy reports for a disk on bus
// at address a, and false when it lists no such disk (locationRules).
func reportedLocation(bus win32.StorageBusType, a win32.SCSIAddress) (Location, bool) {
	switch locationRules[bus] {
	case adapterTargetLUN:
		return Location{Adapter: u8(a.PortNumber), Target: u8(a.TargetId), LUNID: u8(a.Lun)}, true
	case adapterOnly:
		return Location{Adapter: u8(a.PortNumber)}, true
	}
	return Location{}, false
}

func u8(v uint8) string { return strconv.Itoa(int(v)) }
