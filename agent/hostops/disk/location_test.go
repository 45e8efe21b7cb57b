package disk

import (
	"context"
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/pipeguard/pipeguard/agent/hostops/win32"
	"github.com/pipeguard/pipeguard/internal/testing/win32test"
)

// csiProxyParse is CSI Proxy 1.3's reading of an MSFT_Disk.Location in
// ListDiskLocations: a string of fewer than five ":"-separated parts lists
// nothing; otherwise each part, trimmed, that splits on " " into exactly
// two words sets Adapter, Target or LUNID by its first word (others, such
// as "Port 0", are ignored), and the disk is listed when any part had two
// words.
func csiProxyParse(location string) (Location, bool) {
	parts := strings.Split(location, ":")
	if len(parts) < 5 {
		return Location{}, false
	}
	var loc Location
	found := false
	for _, part := range parts {
		words := strings.Split(strings.TrimSpace(part), " ")
		if len(words) != 2 {
			continue
		}
		found = true
		value := strings.TrimSpace(words[1])
		switch strings.TrimSpace(words[0]) {
		case "Adapter":
			loc.Adapter = value
		case "Target":
			loc.Target = value
		case "LUN":
			loc.LUNID = value
		}
	}
	return loc, found
}

// providerLocation is the MSFT_Disk.Location the storage provider writes
// for a disk on bus at address a, as locationRules reads it; slot varies
// the adapter's place among the forms seen on real hosts.
func providerLocation(bus win32.StorageBusType, a win32.SCSIAddress, slot int) string {
	switch bus {
	case win32.BusTypeScsi, win32.BusTypeSas, win32.BusTypeFibre, win32.BusTypeiScsi, win32.BusTypeRAID,
		win32.BusTypeVirtual, win32.BusTypeFileBackedVirtual, win32.BusTypeSpaces, win32.BusTypeNvme,
		win32.BusTypeNvmeof, win32.BusTypeSCM, win32.BusTypeUfs:
		place := []string{"Integrated", "PCI Slot 3", "Integrated : Bus 0 : Device 63667 : Function 30747"}[slot%3]
		return fmt.Sprintf("%s : Adapter %d : Port %d : Target %d : LUN %d", place, a.PortNumber, a.PathId, a.TargetId, a.Lun)
	case win32.BusTypeSata:
		return fmt.Sprintf("Integrated : Bus 0 : Device 31 : Function 2 : Adapter %d : Port %d", a.PortNumber, a.PathId)
	case win32.BusTypeAta, win32.BusTypeAtapi:
		return fmt.Sprintf("PCI Slot %d : Adapter %d : Channel %d : Device %d", slot, a.PortNumber, a.PathId, a.TargetId)
	case win32.BusTypeUsb:
		return "Intel(R) USB 3.0 eXtensible Host Controller - 1.0 (Microsoft)"
	}
	return ""
}

// The strings seen on real hosts read as CSI Proxy reads them.
func TestCSIProxyParseRealStrings(t *testing.T) {
	for s, want := range map[string]*Location{
		"Integrated : Adapter 3 : Port 0 : Target 0 : LUN 0":                                         {Adapter: "3", Target: "0", LUNID: "0"},
		"Integrated : Bus 0 : Device 63667 : Function 30747 : Adapter 1 : Port 0 : Target 0 : LUN 1": {Adapter: "1", Target: "0", LUNID: "1"},
		"PCI Slot 3 : Adapter 0 : Port 0 : Target 1 : LUN 0":                                         {Adapter: "0", Target: "1", LUNID: "0"},
		"PCI Slot 0 : Adapter 0 : Channel 0 : Device 0":                                              nil,
		"Integrated : Bus 0 : Device 31 : Function 2 : Adapter 0 : Port 1":                           {Adapter: "0"},
		"":                  nil,
		"a : b : c : d : e": nil,
		"Adapter  1 : Port 0 : Target 0 : LUN 0 : x": {Target: "0", LUNID: "0"},
	} {
		got, ok := csiProxyParse(s)
		if ok != (want != nil) || (want != nil && got != *want) {
			t.Errorf("%q: %+v, %v; want %+v", s, got, ok, want)
		}
	}
}

// The conformance test: for every bus type and a spread of addresses, the
// location pipeguard derives from the bus type and the SCSI address is the
// one CSI Proxy parses from the string the provider writes for that disk.
func TestReportedLocationMatchesCSIProxy(t *testing.T) {
	addrs := []win32.SCSIAddress{{}, {PortNumber: 3, PathId: 0, TargetId: 0, Lun: 1}, {PortNumber: 1, PathId: 2, TargetId: 3, Lun: 4},
		{PortNumber: 255, PathId: 255, TargetId: 255, Lun: 255}, {PortNumber: 0, PathId: 0, TargetId: 1, Lun: 63}}
	for bus := win32.StorageBusType(0); bus <= 0x80; bus++ {
		for i, a := range addrs {
			s := providerLocation(bus, a, i)
			want, wantOK := csiProxyParse(s)
			got, ok := reportedLocation(bus, a)
			if ok != wantOK || got != want {
				t.Errorf("%s at %+v: pipeguard reports %+v (listed %v); CSI Proxy reads %q as %+v (listed %v)", bus, a, got, ok, s, want, wantOK)
			}
			if got.Bus != "" {
				t.Errorf("%s: Bus set to %q", bus, got.Bus)
			}
		}
	}
}

// An Azure Gen1 node: the OS and temporary disks on IDE, a SATA disk, and a
// data disk at LUN 0 on the SCSI controller. azuredisk's lookup of LUN 0
// (the first entry of the map, in Go's random order, whose LUNID matches)
// finds the data disk every time.
func TestAzureGen1LookupOfLUN0FindsTheDataDisk(t *testing.T) {
	h := win32test.New()
	h.AddDisk(win32test.Disk{Number: 0, Bus: win32.BusTypeAta, SCSI: &win32.SCSIAddress{PortNumber: 0, PathId: 0, TargetId: 0, Lun: 0}, Serial: "OS"})
	h.AddDisk(win32test.Disk{Number: 1, Bus: win32.BusTypeAta, SCSI: &win32.SCSIAddress{PortNumber: 1, PathId: 0, TargetId: 0, Lun: 0}, Serial: "TEMP"})
	h.AddDisk(win32test.Disk{Number: 2, Bus: win32.BusTypeSata, SCSI: &win32.SCSIAddress{PortNumber: 2, PathId: 0, TargetId: 0, Lun: 0}})
	h.AddDisk(win32test.Disk{Number: 3, Bus: win32.BusTypeVirtual, SCSI: &win32.SCSIAddress{PortNumber: 3, PathId: 0, TargetId: 0, Lun: 0}})
	n := Native{deps: Deps{Sys: h}}
	locs, err := n.ListDiskLocations(context.Background())
	want := map[uint32]Location{2: {Adapter: "2"}, 3: {Adapter: "3", Target: "0", LUNID: "0"}}
	if err != nil || !reflect.DeepEqual(locs, want) {
		t.Fatalf("ListDiskLocations = %v, %v\nwant %v", locs, err, want)
	}
	for range 100 {
		if got := azurediskFindDiskByLun(locs, "0"); got != "3" {
			t.Fatalf("LUN 0 resolved to disk %q, want the data disk 3", got)
		}
	}
}

// azurediskFindDiskByLun replays azuredisk's Windows mounter (FindDiskByLun):
// range over the map, the first LUNID equal, ignoring case, wins.
func azurediskFindDiskByLun(locs map[uint32]Location, lun string) string {
	for disk, loc := range locs {
		if strings.EqualFold(loc.LUNID, lun) {
			return strconv.Itoa(int(disk))
		}
	}
	return ""
}
