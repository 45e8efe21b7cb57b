package app

import (
	"context"
	"reflect"
	"strings"
	"testing"

	diskv1 "github.com/kubernetes-csi/csi-proxy/client/api/disk/v1"
	volv1 "github.com/kubernetes-csi/csi-proxy/client/api/volume/v1"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/pipeguard/pipeguard/agent/hostops/win32"
	"github.com/pipeguard/pipeguard/internal/testing/win32test"
	"github.com/pipeguard/pipeguard/internal/testing/wmitest"
)

// A disk and a volume the host answers unreadably are left out of the
// listings, which answer the rest; each is logged, naming it and the fault,
// and counted in pipeguard_agent_host_listing_skipped_total.
func TestHostListingsSkipAndCountUnreadableEntries(t *testing.T) {
	const (
		good = `\\?\Volume{452e318a-5cde-421e-9831-b9853c521012}\`
		bad  = `\\?\Volume{00000000-5cde-421e-9831-b9853c521012}\`
	)
	host := win32test.New()
	host.AddDisk(win32test.Disk{Number: 1, Bus: win32.BusTypeVirtual, SCSI: &win32.SCSIAddress{PortNumber: 3, Lun: 1}})
	host.AddDisk(win32test.Disk{Number: 2, Bus: win32.BusTypeVirtual, SCSI: &win32.SCSIAddress{PortNumber: 3, Lun: 2}})
	host.Answer(`\\.\PhysicalDrive2`, win32.IOCTL_SCSI_GET_ADDRESS, make([]byte, 8), nil)
	host.AddVolume(win32test.Volume{ID: good, Extents: []win32.DiskExtent{{DiskNumber: 1}}, PartitionNumber: 1})
	host.AddVolume(win32test.Volume{ID: bad, Extents: []win32.DiskExtent{{DiskNumber: 1}}, PartitionNumber: 2})
	host.Answer(win32.VolumeDevice(bad), win32.IOCTL_VOLUME_GET_VOLUME_DISK_EXTENTS, []byte{1}, nil)
	reg := prometheus.NewRegistry()
	var log logLines
	r := start(t, Options{GOOS: "windows", KubeletPath: `C:\var\lib\kubelet`, Filesystem: &fakeFS{}, WMI: wmitest.New(),
		Win32: host, System: &recordingSystem{}, Registry: reg, Log: log.logger()})
	ctx := context.Background()

	if got := counters(t, reg, "pipeguard_agent_host_listing_skipped_total"); !reflect.DeepEqual(got, map[string]float64{
		"group=disk,listing=ListDiskIDs": 0, "group=disk,listing=ListDiskLocations": 0, "group=volume,listing=ListVolumesOnDisk": 0,
	}) {
		t.Fatalf("before any listing: %v", got)
	}
	locs, err := diskv1.NewDiskClient(r.dial(t, "disk", "v1")).ListDiskLocations(ctx, &diskv1.ListDiskLocationsRequest{})
	if err != nil || len(locs.DiskLocations) != 1 || locs.DiskLocations[1].GetLUNID() != "1" || locs.DiskLocations[1].GetBus() != "" {
		t.Fatalf("ListDiskLocations = %v, %v", locs, err)
	}
	vols, err := volv1.NewVolumeClient(r.dial(t, "volume", "v1")).ListVolumesOnDisk(ctx, &volv1.ListVolumesOnDiskRequest{DiskNumber: 1})
	if err != nil || !reflect.DeepEqual(vols.GetVolumeIds(), []string{good}) {
		t.Fatalf("ListVolumesOnDisk = %v, %v", vols, err)
	}
	if got := counters(t, reg, "pipeguard_agent_host_listing_skipped_total"); !reflect.DeepEqual(got, map[string]float64{
		"group=disk,listing=ListDiskIDs": 0, "group=disk,listing=ListDiskLocations": 1, "group=volume,listing=ListVolumesOnDisk": 1,
	}) {
		t.Fatalf("after the listings: %v", got)
	}
	lines := log.String()
	for _, want := range []string{
		`"msg"="left an entry out of a host listing: the host's answer for it cannot be read; the other entries were listed" ` +
			`"error"="reading the location of disk 2: SCSI_ADDRESS: Length at offset 0: is 0, not the 8 bytes of the structure" "group"="disk" "listing"="ListDiskLocations"`,
		`"error"="listing the volumes on disk 1: volume \\\\?\\Volume{00000000-5cde-421e-9831-b9853c521012}\\: VOLUME_DISK_EXTENTS: NumberOfDiskExtents at offset 0: 1 bytes were returned, the field takes 4 (truncated answer)" "group"="volume" "listing"="ListVolumesOnDisk"`,
	} {
		if !strings.Contains(lines, want) {
			t.Errorf("the log holds no line with\n%s\nlog:\n%s", want, lines)
		}
	}
}
