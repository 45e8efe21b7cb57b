package app

import (
	"context"
	"encoding/binary"
	"os"
	"path/filepath"
	"strings"
	"testing"

	diskv1alpha1 "github.com/kubernetes-csi/csi-proxy/client/api/disk/v1alpha1"
	diskv1beta1 "github.com/kubernetes-csi/csi-proxy/client/api/disk/v1beta1"
	diskv1beta2 "github.com/kubernetes-csi/csi-proxy/client/api/disk/v1beta2"
	fsv1 "github.com/kubernetes-csi/csi-proxy/client/api/filesystem/v1"
	smbv1 "github.com/kubernetes-csi/csi-proxy/client/api/smb/v1"
	volv1beta1 "github.com/kubernetes-csi/csi-proxy/client/api/volume/v1beta1"
	volv1beta2 "github.com/kubernetes-csi/csi-proxy/client/api/volume/v1beta2"
	"google.golang.org/grpc/codes"

	"github.com/pipeguard/pipeguard/agent/hostops/win32"
	"github.com/pipeguard/pipeguard/agent/hostops/wmi"
	"github.com/pipeguard/pipeguard/internal/testing/win32test"
	"github.com/pipeguard/pipeguard/internal/testing/wmitest"
)

// conformanceCases are the checks of the rows of docs/windows.md's
// conformance table that no other test holds, by "group/RPC": each makes
// the call through the unmodified CSI Proxy client, on the pipes' gRPC
// services, against a Windows host in memory, and asserts the answer CSI
// Proxy 1.3 gives for it.
func conformanceCases() map[string]func(t *testing.T) {
	ctx := context.Background()
	return map[string]func(t *testing.T){
		// DiskStats reads the disk number from a string and answers the
		// disk's size, as GetDiskStats does.
		"disk/DiskStats": func(t *testing.T) {
			r, _, host, _ := windowsAgentHost(t)
			host.AddDisk(win32test.Disk{Number: 2, Size: 64 << 30})
			c := diskv1beta1.NewDiskClient(r.dial(t, "disk", "v1beta1"))
			got, err := c.DiskStats(ctx, &diskv1beta1.DiskStatsRequest{DiskID: "2"})
			if err != nil || got.DiskSize != 64<<30 {
				t.Fatalf("DiskStats(2) = %v, %v; want the disk's 64 GiB", got, err)
			}
			_, err = c.DiskStats(ctx, &diskv1beta1.DiskStatsRequest{DiskID: "two"})
			wantStatus(t, err, codes.InvalidArgument, `diskID: "two" is not a disk number`)
		},
		// GetAttachState answers whether the disk is online: not IsOffline.
		"disk/GetAttachState": func(t *testing.T) {
			r, w, _, _ := windowsAgentHost(t)
			d := w.storage.AddDisk(3, 8<<30, 2)
			w.storage.AddDisk(4, 8<<30, 2)
			c := diskv1beta2.NewDiskClient(r.dial(t, "disk", "v1beta2"))
			for offline, online := range map[bool]bool{true: false, false: true} {
				w.storage.Set(d, "IsOffline", offline)
				got, err := c.GetAttachState(ctx, &diskv1beta2.GetAttachStateRequest{DiskID: "3"})
				if err != nil || got.IsOnline != online {
					t.Fatalf("GetAttachState with IsOffline %v = %v, %v; want IsOnline %v", offline, got, err, online)
				}
			}
			for _, q := range w.Queries() {
				if q != "SELECT * FROM MSFT_Disk WHERE Number = 3" {
					t.Fatalf("the state of disk 3 was asked with %q", q)
				}
			}
			if calls := w.Calls(); len(calls) != 0 {
				t.Fatalf("reading the state called %+v", calls)
			}
		},
		// SetAttachState takes the disk offline or online.
		"disk/SetAttachState": func(t *testing.T) {
			r, w, _, _ := windowsAgentHost(t)
			d := w.storage.AddDisk(3, 8<<30, 2)
			w.storage.AddDisk(4, 8<<30, 2)
			c := diskv1beta2.NewDiskClient(r.dial(t, "disk", "v1beta2"))
			if _, err := c.SetAttachState(ctx, &diskv1beta2.SetAttachStateRequest{DiskID: "3", IsOnline: false}); err != nil {
				t.Fatal(err)
			}
			calls := w.Calls()
			if len(calls) != 1 || calls[0].Method != "MSFT_Disk.Offline" || calls[0].Path != wmitest.RelPath("MSFT_Disk", "ObjectId", w.storage.Prop(d, "ObjectId").(string)) {
				t.Fatalf("SetAttachState(3, offline) called %+v; want one MSFT_Disk.Offline of disk 3", calls)
			}
			if w.storage.Prop(d, "IsOffline") != true {
				t.Fatal("disk 3 is still online")
			}
		},
		// GetDiskNumberByName finds the disk whose page 83 identifier is
		// the name; no such disk is an error naming it.
		"disk/GetDiskNumberByName": func(t *testing.T) {
			r, _, host, _ := windowsAgentHost(t)
			host.AddDisk(win32test.Disk{Number: 4, Page83: asciiPage83("MSFT    Virtual_Disk    60022480f48d"), Serial: "S4"})
			c := diskv1alpha1.NewDiskClient(r.dial(t, "disk", "v1alpha1"))
			got, err := c.GetDiskNumberByName(ctx, &diskv1alpha1.GetDiskNumberByNameRequest{DiskName: "MSFT    Virtual_Disk    60022480f48d"})
			if err != nil || got.DiskNumber != "4" {
				t.Fatalf("GetDiskNumberByName = %v, %v; want disk 4", got, err)
			}
			_, err = c.GetDiskNumberByName(ctx, &diskv1alpha1.GetDiskNumberByNameRequest{DiskName: "no such disk"})
			wantStatus(t, err, codes.Unknown, `no disk has the page 83 identifier "no such disk"`)
		},
		// DismountVolume flushes the volume and removes its mount point,
		// as UnmountVolume does.
		"volume/DismountVolume": func(t *testing.T) {
			r, _, host, _ := windowsAgentHost(t)
			host.AddVolume(win32test.Volume{ID: volumeID, FileSystem: "NTFS", Total: 100, Free: 40})
			target := `C:\var\lib\kubelet\plugins\kubernetes.io\csi\pd.csi.storage.gke.io\abc\globalmount`
			if err := host.SetMountPoint(target+`\`, volumeID); err != nil {
				t.Fatal(err)
			}
			c := volv1beta2.NewVolumeClient(r.dial(t, "volume", "v1beta2"))
			if _, err := c.DismountVolume(ctx, &volv1beta2.DismountVolumeRequest{VolumeId: volumeID, Path: target}); err != nil {
				t.Fatalf("DismountVolume: %v", err)
			}
			if mounts := host.MountPoints(); len(mounts) != 0 || host.Flushes(volumeID) != 1 {
				t.Fatalf("after DismountVolume: mount points %v, %d flushes; want none left and one flush", mounts, host.Flushes(volumeID))
			}
		},
		// GetVolumeDiskNumber answers the disk the volume lies on, as a
		// number, as GetDiskNumberFromVolumeID does.
		"volume/GetVolumeDiskNumber": func(t *testing.T) {
			r, _, host, _ := windowsAgentHost(t)
			host.AddVolume(win32test.Volume{ID: volumeID, FileSystem: "NTFS", PartitionNumber: 2,
				Extents: []win32.DiskExtent{{DiskNumber: 5, StartingOffset: 1 << 20, ExtentLength: 1 << 30}}})
			c := volv1beta1.NewVolumeClient(r.dial(t, "volume", "v1beta1"))
			got, err := c.GetVolumeDiskNumber(ctx, &volv1beta1.VolumeDiskNumberRequest{VolumeId: volumeID})
			if err != nil || got.DiskNumber != 5 {
				t.Fatalf("GetVolumeDiskNumber = %v, %v; want disk 5", got, err)
			}
		},
		// Rmdir with force of a path that does not exist, or whose parent
		// does not, succeeds (os.RemoveAll): every driver's unpublish and
		// unstage remove their path without asking whether it exists.
		// Without force it fails, as os.Remove does.
		"filesystem/Rmdir": func(t *testing.T) {
			r := start(t, Options{})
			c := fsv1.NewFilesystemClient(r.dial(t, "filesystem", "v1"))
			pod := filepath.Join(r.kubelet, "pods", "uid")
			if err := os.MkdirAll(pod, 0o755); err != nil {
				t.Fatal(err)
			}
			for _, p := range []string{filepath.Join(pod, "missing"), filepath.Join(pod, "volumes", "kubernetes.io~csi", "pv", "mount")} {
				if _, err := c.Rmdir(ctx, &fsv1.RmdirRequest{Path: p, Force: true}); err != nil {
					t.Fatalf("Rmdir(%s, force) of a missing path: %v; want success", p, err)
				}
			}
			if _, err := c.Rmdir(ctx, &fsv1.RmdirRequest{Path: filepath.Join(pod, "missing")}); err == nil {
				t.Fatal("Rmdir without force of a missing path succeeded; want the error os.Remove gives")
			}
			// A missing path reached through a link out of the roots is
			// refused, not taken for one that is gone already.
			outside := t.TempDir()
			if err := os.Symlink(filepath.Join(outside, "gone"), filepath.Join(pod, "out")); err != nil {
				t.Fatal(err)
			}
			for _, p := range []string{filepath.Join(pod, "out", "x"), filepath.Join(pod, "out", "gone", "x")} {
				_, err := c.Rmdir(ctx, &fsv1.RmdirRequest{Path: p, Force: true})
				wantStatus(t, err, codes.PermissionDenied, "symlink-escape")
			}
		},
		// Mkdir of a directory that exists succeeds (os.MkdirAll).
		"filesystem/Mkdir": func(t *testing.T) {
			r := start(t, Options{})
			c := fsv1.NewFilesystemClient(r.dial(t, "filesystem", "v1"))
			dir := filepath.Join(r.kubelet, "plugins", "kubernetes.io", "csi", "drv", "pv", "globalmount")
			for i := 0; i < 2; i++ {
				if _, err := c.Mkdir(ctx, &fsv1.MkdirRequest{Path: dir}); err != nil {
					t.Fatalf("Mkdir #%d: %v", i+1, err)
				}
			}
		},
		// RemoveSmbGlobalMapping removes the mapping of the share root of
		// the path it is given: csi-driver-smb sends its link's target,
		// sub-directory included, with '/' or '\\'.
		"smb/RemoveSmbGlobalMapping": func(t *testing.T) {
			r, w, _, _ := windowsAgentHost(t)
			c := smbv1.NewSmbClient(r.dial(t, "smb", "v1"))
			for _, p := range []string{`\\SRV\Share\pvc-1\sub`, `//SRV/Share/pvc-1`} {
				w.smb.AddMapping(`\\srv\share`, wmitest.SmbStatusOK)
				if _, err := c.RemoveSmbGlobalMapping(ctx, &smbv1.RemoveSmbGlobalMappingRequest{RemotePath: p}); err != nil {
					t.Fatalf("RemoveSmbGlobalMapping(%s): %v", p, err)
				}
				if m := w.Instances(wmi.NamespaceSMB, wmitest.ClassSmbGlobalMapping); len(m) != 0 {
					t.Fatalf("RemoveSmbGlobalMapping(%s) left the mappings %v", p, m)
				}
			}
			calls := w.Calls()
			if len(calls) != 2 {
				t.Fatalf("called %+v; want two removals", calls)
			}
			for _, c := range calls {
				if c.Method != "MSFT_SmbGlobalMapping.Remove" || !strings.EqualFold(c.Path, wmitest.RelPath(wmitest.ClassSmbGlobalMapping, "RemotePath", `\\srv\share`)) {
					t.Fatalf("called %s of %s; want the Remove of the share root's mapping", c.Method, c.Path)
				}
			}
			for _, q := range w.Queries() {
				if !strings.EqualFold(q, `SELECT * FROM MSFT_SmbGlobalMapping WHERE RemotePath = '\\\\srv\\share'`) {
					t.Fatalf("queried %q; want the share root's mapping", q)
				}
			}
		},
		// GetVolumeIDFromMount answers the volume mounted at the path, in
		// the \\?\Volume{GUID}\ form, as GetVolumeIDFromTargetPath does.
		"volume/GetVolumeIDFromMount": func(t *testing.T) {
			r, _, host, _ := windowsAgentHost(t)
			host.AddVolume(win32test.Volume{ID: volumeID, FileSystem: "NTFS"})
			target := `C:\var\lib\kubelet\plugins\kubernetes.io\csi\disk.csi.azure.com\abc\globalmount`
			if err := host.SetMountPoint(target+`\`, volumeID); err != nil {
				t.Fatal(err)
			}
			c := volv1beta1.NewVolumeClient(r.dial(t, "volume", "v1beta1"))
			got, err := c.GetVolumeIDFromMount(ctx, &volv1beta1.VolumeIDFromMountRequest{Mount: target})
			if err != nil || !strings.EqualFold(got.VolumeId, volumeID) {
				t.Fatalf("GetVolumeIDFromMount = %v, %v; want %s", got, err, volumeID)
			}
		},
	}
}

// TestConformance runs conformanceCases, one subtest per row.
func TestConformance(t *testing.T) {
	for name, check := range conformanceCases() {
		t.Run(name, check)
	}
}

// asciiPage83 encodes a STORAGE_DEVICE_ID_DESCRIPTOR with one identifier:
// id in the ASCII code set, associated with the device.
func asciiPage83(id string) []byte {
	const header, identHeader = 12, 16
	const codeSetASCII, typeVendorID = 2, 1
	n := identHeader + len(id)
	b := make([]byte, header+n)
	binary.LittleEndian.PutUint32(b[0:], 1)
	binary.LittleEndian.PutUint32(b[4:], uint32(len(b)))
	binary.LittleEndian.PutUint32(b[8:], 1)
	binary.LittleEndian.PutUint32(b[12:], codeSetASCII)
	binary.LittleEndian.PutUint32(b[16:], typeVendorID)
	binary.LittleEndian.PutUint16(b[20:], uint16(len(id)))
	binary.LittleEndian.PutUint16(b[22:], uint16(n))
	binary.LittleEndian.PutUint32(b[24:], 0) // StorageIdAssocDevice
	copy(b[28:], id)
	return b
}
