package app

import (
	"context"
	"fmt"
	"runtime"
	"strings"
	"testing"

	diskv1 "github.com/kubernetes-csi/csi-proxy/client/api/disk/v1"
	diskv1alpha1 "github.com/kubernetes-csi/csi-proxy/client/api/disk/v1alpha1"
	diskv1beta1 "github.com/kubernetes-csi/csi-proxy/client/api/disk/v1beta1"
	diskv1beta2 "github.com/kubernetes-csi/csi-proxy/client/api/disk/v1beta2"
	diskv1beta3 "github.com/kubernetes-csi/csi-proxy/client/api/disk/v1beta3"
	iscsiv1alpha1 "github.com/kubernetes-csi/csi-proxy/client/api/iscsi/v1alpha1"
	iscsiv1alpha2 "github.com/kubernetes-csi/csi-proxy/client/api/iscsi/v1alpha2"
	smbv1 "github.com/kubernetes-csi/csi-proxy/client/api/smb/v1"
	smbv1alpha1 "github.com/kubernetes-csi/csi-proxy/client/api/smb/v1alpha1"
	smbv1beta1 "github.com/kubernetes-csi/csi-proxy/client/api/smb/v1beta1"
	smbv1beta2 "github.com/kubernetes-csi/csi-proxy/client/api/smb/v1beta2"
	sysv1alpha1 "github.com/kubernetes-csi/csi-proxy/client/api/system/v1alpha1"
	volv1 "github.com/kubernetes-csi/csi-proxy/client/api/volume/v1"
	volv1alpha1 "github.com/kubernetes-csi/csi-proxy/client/api/volume/v1alpha1"
	volv1beta1 "github.com/kubernetes-csi/csi-proxy/client/api/volume/v1beta1"
	volv1beta2 "github.com/kubernetes-csi/csi-proxy/client/api/volume/v1beta2"
	volv1beta3 "github.com/kubernetes-csi/csi-proxy/client/api/volume/v1beta3"
	volv2alpha1 "github.com/kubernetes-csi/csi-proxy/client/api/volume/v2alpha1"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/pipeguard/pipeguard/agent/hostops/win32"
	"github.com/pipeguard/pipeguard/agent/hostops/wmi"
	"github.com/pipeguard/pipeguard/internal/testing/win32test"
	"github.com/pipeguard/pipeguard/internal/testing/wmitest"
)

// TestWindowsOnlyGroupsUnimplemented calls every Windows-only API group
// version on the Linux agent: each answers Unimplemented, saying it needs
// Windows, and nothing runs on the host.
func TestWindowsOnlyGroupsUnimplemented(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("these groups are served on Windows")
	}
	r := start(t, Options{})
	ctx := context.Background()
	type call func(*grpc.ClientConn) error
	cases := map[string]call{
		"disk/v1alpha1": func(c *grpc.ClientConn) error {
			_, err := diskv1alpha1.NewDiskClient(c).Rescan(ctx, &diskv1alpha1.RescanRequest{})
			return err
		},
		"disk/v1beta1": func(c *grpc.ClientConn) error {
			_, err := diskv1beta1.NewDiskClient(c).ListDiskIDs(ctx, &diskv1beta1.ListDiskIDsRequest{})
			return err
		},
		"disk/v1beta2": func(c *grpc.ClientConn) error {
			_, err := diskv1beta2.NewDiskClient(c).PartitionDisk(ctx, &diskv1beta2.PartitionDiskRequest{DiskID: "not a number"})
			return err
		},
		"disk/v1beta3": func(c *grpc.ClientConn) error {
			_, err := diskv1beta3.NewDiskClient(c).GetDiskStats(ctx, &diskv1beta3.GetDiskStatsRequest{DiskNumber: 1})
			return err
		},
		"disk/v1": func(c *grpc.ClientConn) error {
			_, err := diskv1.NewDiskClient(c).ListDiskLocations(ctx, &diskv1.ListDiskLocationsRequest{})
			return err
		},
		"volume/v1alpha1": func(c *grpc.ClientConn) error {
			_, err := volv1alpha1.NewVolumeClient(c).FormatVolume(ctx, &volv1alpha1.FormatVolumeRequest{})
			return err
		},
		"volume/v1beta1": func(c *grpc.ClientConn) error {
			_, err := volv1beta1.NewVolumeClient(c).VolumeStats(ctx, &volv1beta1.VolumeStatsRequest{})
			return err
		},
		"volume/v1beta2": func(c *grpc.ClientConn) error {
			_, err := volv1beta2.NewVolumeClient(c).WriteVolumeCache(ctx, &volv1beta2.WriteVolumeCacheRequest{})
			return err
		},
		"volume/v1beta3": func(c *grpc.ClientConn) error {
			_, err := volv1beta3.NewVolumeClient(c).IsVolumeFormatted(ctx, &volv1beta3.IsVolumeFormattedRequest{})
			return err
		},
		"volume/v1": func(c *grpc.ClientConn) error {
			_, err := volv1.NewVolumeClient(c).MountVolume(ctx, &volv1.MountVolumeRequest{VolumeId: "x", TargetPath: "/etc"})
			return err
		},
		"volume/v2alpha1": func(c *grpc.ClientConn) error {
			_, err := volv2alpha1.NewVolumeClient(c).GetClosestVolumeIDFromTargetPath(ctx, &volv2alpha1.GetClosestVolumeIDFromTargetPathRequest{})
			return err
		},
		"smb/v1alpha1": func(c *grpc.ClientConn) error {
			_, err := smbv1alpha1.NewSmbClient(c).RemoveSmbGlobalMapping(ctx, &smbv1alpha1.RemoveSmbGlobalMappingRequest{})
			return err
		},
		"smb/v1beta1": func(c *grpc.ClientConn) error {
			_, err := smbv1beta1.NewSmbClient(c).NewSmbGlobalMapping(ctx, &smbv1beta1.NewSmbGlobalMappingRequest{})
			return err
		},
		"smb/v1beta2": func(c *grpc.ClientConn) error {
			_, err := smbv1beta2.NewSmbClient(c).NewSmbGlobalMapping(ctx, &smbv1beta2.NewSmbGlobalMappingRequest{})
			return err
		},
		"smb/v1": func(c *grpc.ClientConn) error {
			_, err := smbv1.NewSmbClient(c).NewSmbGlobalMapping(ctx, &smbv1.NewSmbGlobalMappingRequest{RemotePath: `\\srv\share`})
			return err
		},
		"system/v1alpha1": func(c *grpc.ClientConn) error {
			_, err := sysv1alpha1.NewSystemClient(c).GetBIOSSerialNumber(ctx, &sysv1alpha1.GetBIOSSerialNumberRequest{})
			return err
		},
		"iscsi/v1alpha1": func(c *grpc.ClientConn) error {
			_, err := iscsiv1alpha1.NewIscsiClient(c).ListTargetPortals(ctx, &iscsiv1alpha1.ListTargetPortalsRequest{})
			return err
		},
		"iscsi/v1alpha2": func(c *grpc.ClientConn) error {
			_, err := iscsiv1alpha2.NewIscsiClient(c).SetMutualChapSecret(ctx, &iscsiv1alpha2.SetMutualChapSecretRequest{})
			return err
		},
	}
	for name, call := range cases {
		t.Run(name, func(t *testing.T) {
			group, version, _ := strings.Cut(name, "/")
			err := call(r.dial(t, group, version))
			wantStatus(t, err, codes.Unimplemented, fmt.Sprintf(
				" needs Windows: pipeguard-agent serves the %s API group only on Windows nodes, and this one runs %s", group, runtime.GOOS))
		})
	}
}

// hostWMI is the WMI service of an agent's host in memory: the storage,
// SMB and iSCSI classes of one provider, with their fixtures.
type hostWMI struct {
	*wmitest.Provider
	storage *wmitest.Storage
	smb     *wmitest.SMB
	iscsi   *wmitest.ISCSI
}

func newHostWMI() *hostWMI {
	p := wmitest.New()
	return &hostWMI{Provider: p, storage: wmitest.AddStorage(p), smb: wmitest.AddSMB(p), iscsi: wmitest.AddISCSI(p)}
}

// addVolume adds the volume id, formatted fileSystem, on a partition of
// a disk of its own, number disk, and returns it.
func (w *hostWMI) addVolume(disk uint32, id, fileSystem string) *wmitest.Instance {
	d := w.storage.AddDisk(disk, 16<<30, 2)
	return w.storage.AddVolume(w.storage.AddPartition(d, 8<<30, wmitest.GPTBasicData), id, fileSystem)
}

// methods returns the methods called, in order.
func (w *hostWMI) methods() []string {
	var out []string
	for _, c := range w.Calls() {
		out = append(out, c.Method)
	}
	return out
}

// windowsAgent runs the agent with Windows path rules, an in-memory WMI
// provider for the storage, SMB and iSCSI operations and a fake host for
// the Win32 calls (one SCSI disk, number 1 at adapter 3, LUN 1), so the
// Windows-only groups run their whole request path on real sockets here.
func windowsAgent(t *testing.T, allowedServices ...string) (*running, *hostWMI) {
	r, w, _, _ := windowsAgentHost(t, allowedServices...)
	return r, w
}

// windowsAgentHost is windowsAgent that also returns its fake host and its
// system group's recorder.
func windowsAgentHost(t *testing.T, allowedServices ...string) (*running, *hostWMI, *win32test.Host, *recordingSystem) {
	t.Helper()
	w := newHostWMI()
	sys := &recordingSystem{}
	host := win32test.New()
	// C: is the node's system volume, which holds the kubelet directory:
	// MountVolume and FormatVolume tell the node's volumes from it.
	host.AddVolume(win32test.Volume{ID: nodeVolumeID, FileSystem: "NTFS"})
	host.AddDrive(`C:\`, nodeVolumeID)
	host.AddDisk(win32test.Disk{Number: 1, Bus: win32.BusTypeVirtual, SCSI: &win32.SCSIAddress{PortNumber: 3, Lun: 1}})
	w.addVolume(0, nodeVolumeID, "NTFS")
	r := start(t, Options{
		GOOS:            "windows",
		KubeletPath:     `C:\var\lib\kubelet`,
		Filesystem:      &fakeFS{},
		WMI:             w,
		Win32:           host,
		System:          sys,
		AllowedServices: allowedServices,
		RequirePrivacy:  true,
	})
	return r, w, host, sys
}

const (
	volumeID     = `\\?\Volume{452e318a-5cde-421e-9831-b9853c521012}\`
	nodeVolumeID = `\\?\Volume{00000000-0000-0000-0000-00000000000c}\`
)

// TestWindowsGroupsValidateFirst checks, per request field, that bad input is
// refused with a code and a message naming the field or rule, and that no
// WMI call or query reached the host.
func TestWindowsGroupsValidateFirst(t *testing.T) {
	r, w, host, system := windowsAgentHost(t, "csiproxy-helper")
	ctx := context.Background()
	smb := smbv1.NewSmbClient(r.dial(t, "smb", "v1"))
	vol := volv1.NewVolumeClient(r.dial(t, "volume", "v1"))
	volBeta := volv1beta1.NewVolumeClient(r.dial(t, "volume", "v1beta1"))
	sys := sysv1alpha1.NewSystemClient(r.dial(t, "system", "v1alpha1"))
	iscsi := iscsiv1alpha2.NewIscsiClient(r.dial(t, "iscsi", "v1alpha2"))
	disk := diskv1beta2.NewDiskClient(r.dial(t, "disk", "v1beta2"))
	portal := &iscsiv1alpha2.TargetPortal{TargetAddress: "10.0.0.5", TargetPort: 3260}

	cases := map[string]struct {
		call func() error
		code codes.Code
		msg  string
	}{
		"smb local path outside the kubelet path": {
			call: func() error {
				_, err := smb.NewSmbGlobalMapping(ctx, &smbv1.NewSmbGlobalMappingRequest{RemotePath: `\\srv\share`, LocalPath: `C:\Windows\System32\x`, Username: "u", Password: "p"})
				return err
			},
			code: codes.PermissionDenied, msg: `local_path: path "C:\Windows\System32\x" is outside the allowed roots [C:\var\lib\kubelet]`,
		},
		"smb local path with long-path prefix": {
			call: func() error {
				_, err := smb.NewSmbGlobalMapping(ctx, &smbv1.NewSmbGlobalMappingRequest{RemotePath: `\\srv\share`, LocalPath: `\\?\C:\var\lib\kubelet\x`})
				return err
			},
			code: codes.InvalidArgument, msg: "(confinement rule alternate-prefix)",
		},
		"smb remote path injection": {
			call: func() error {
				_, err := smb.NewSmbGlobalMapping(ctx, &smbv1.NewSmbGlobalMappingRequest{RemotePath: `\\srv\share"; Remove-Item C:\ -Recurse; "`})
				return err
			},
			code: codes.InvalidArgument, msg: `contains one of :*?"<>|: give a share path like`,
		},
		"smb remote path not UNC": {
			call: func() error {
				_, err := smb.RemoveSmbGlobalMapping(ctx, &smbv1.RemoveSmbGlobalMappingRequest{RemotePath: `C:\share`})
				return err
			},
			code: codes.InvalidArgument, msg: `remote_path: "C:\share" is not a UNC path`,
		},
		"smb user name with newline": {
			call: func() error {
				_, err := smb.NewSmbGlobalMapping(ctx, &smbv1.NewSmbGlobalMappingRequest{RemotePath: `\\srv\share`, Username: "u\nStop-Computer"})
				return err
			},
			code: codes.InvalidArgument, msg: "username: contains a control character",
		},
		"volume id injection": {
			call: func() error {
				_, err := vol.FormatVolume(ctx, &volv1.FormatVolumeRequest{VolumeId: `$(Stop-Computer)`})
				return err
			},
			code: codes.InvalidArgument, msg: `volume_id: "$(Stop-Computer)" is not a volume id`,
		},
		"volume target outside": {
			call: func() error {
				_, err := vol.MountVolume(ctx, &volv1.MountVolumeRequest{VolumeId: volumeID, TargetPath: `C:\var\lib\kubeletX\mnt`})
				return err
			},
			code: codes.PermissionDenied, msg: `target_path: path "C:\var\lib\kubeletX\mnt" is outside the allowed roots`,
		},
		"volume v1beta1 mount traversal": {
			call: func() error {
				_, err := volBeta.GetVolumeIDFromMount(ctx, &volv1beta1.VolumeIDFromMountRequest{Mount: `C:\var\lib\kubelet\..\..\..\Windows`})
				return err
			},
			code: codes.InvalidArgument, msg: `mount: path "C:\var\lib\kubelet\..\..\..\Windows" contains a ".." segment`,
		},
		"volume v1beta1 disk id": {
			call: func() error {
				_, err := volBeta.ListVolumesOnDisk(ctx, &volv1beta1.ListVolumesOnDiskRequest{DiskId: "1; Stop-Computer"})
				return err
			},
			code: codes.InvalidArgument, msg: `disk_id: "1; Stop-Computer" is not a disk number`,
		},
		"volume negative size": {
			call: func() error {
				_, err := vol.ResizeVolume(ctx, &volv1.ResizeVolumeRequest{VolumeId: volumeID, SizeBytes: -1})
				return err
			},
			code: codes.InvalidArgument, msg: "size_bytes: is -1",
		},
		"system service not allowed": {
			call: func() error {
				_, err := sys.StopService(ctx, &sysv1alpha1.StopServiceRequest{Name: "WinDefend", Force: true})
				return err
			},
			code: codes.PermissionDenied,
			msg:  `StopService of service "WinDefend" refused: it is not an allowed service (allowed: [csiproxy-helper]); to allow it, start the agent with --allowed-service=WinDefend (rule allowed-services)`,
		},
		"system service wildcard": {
			call: func() error {
				_, err := sys.StartService(ctx, &sysv1alpha1.StartServiceRequest{Name: "*"})
				return err
			},
			code: codes.InvalidArgument, msg: `name: "*" is not a service name`,
		},
		"iscsi address injection": {
			call: func() error {
				_, err := iscsi.AddTargetPortal(ctx, &iscsiv1alpha2.AddTargetPortalRequest{TargetPortal: &iscsiv1alpha2.TargetPortal{TargetAddress: "10.0.0.5'; calc; '"}})
				return err
			},
			code: codes.InvalidArgument, msg: "target_portal.target_address: ",
		},
		"iscsi missing portal": {
			call: func() error {
				_, err := iscsi.DiscoverTargetPortal(ctx, &iscsiv1alpha2.DiscoverTargetPortalRequest{})
				return err
			},
			code: codes.InvalidArgument, msg: "target_portal: is missing",
		},
		"iscsi bad iqn": {
			call: func() error {
				_, err := iscsi.ConnectTarget(ctx, &iscsiv1alpha2.ConnectTargetRequest{TargetPortal: portal, Iqn: "`calc`"})
				return err
			},
			code: codes.InvalidArgument, msg: "iqn: \"`calc`\" is not an iSCSI name",
		},
		"iscsi CHAP without user": {
			call: func() error {
				_, err := iscsi.ConnectTarget(ctx, &iscsiv1alpha2.ConnectTargetRequest{TargetPortal: portal, Iqn: "iqn.2001-04.com.example:d", AuthType: iscsiv1alpha2.AuthenticationType_ONE_WAY_CHAP})
				return err
			},
			code: codes.InvalidArgument, msg: "chap_username: is empty",
		},
		"disk id not a number": {
			call: func() error {
				_, err := disk.SetAttachState(ctx, &diskv1beta2.SetAttachStateRequest{DiskID: "1 -IsReadOnly"})
				return err
			},
			code: codes.InvalidArgument, msg: `diskID: "1 -IsReadOnly" is not a disk number`,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			wantStatus(t, tc.call(), tc.code, tc.msg)
		})
	}
	if calls, queries := w.Calls(), w.Queries(); len(calls) != 0 || len(queries) != 0 {
		t.Fatalf("refused calls reached WMI: calls %+v, queries %q", calls, queries)
	}
	if calls := host.Calls(); len(calls) != 0 {
		t.Fatalf("refused calls made Win32 calls: %+v", calls)
	}
	if calls := system.calls(); len(calls) != 0 {
		t.Fatalf("refused calls reached the system host operations: %q", calls)
	}
}

// TestWindowsGroupsRun checks accepted calls end to end: the WMI query and
// method call made, with the request values as their literal and
// in-parameters, and the answer read.
func TestWindowsGroupsRun(t *testing.T) {
	r, w, host, sys := windowsAgentHost(t, "CSIProxy-Helper")
	host.AddVolume(win32test.Volume{ID: volumeID, FileSystem: "NTFS", Total: 100, Free: 40})
	ctx := context.Background()

	_, err := smbv1.NewSmbClient(r.dial(t, "smb", "v1")).NewSmbGlobalMapping(ctx, &smbv1.NewSmbGlobalMappingRequest{
		RemotePath: `//srv/share/dir`, LocalPath: `C:\var\lib\kubelet\plugins\smb\pv\globalmount`,
		Username: `DOM\u`, Password: `p'$(x)"`,
	})
	if err != nil {
		t.Fatalf("NewSmbGlobalMapping: %v", err)
	}
	wantQueries := []string{`SELECT * FROM MSFT_SmbGlobalMapping WHERE RemotePath = '\\\\srv\\share'`}
	if q := w.Queries(); fmt.Sprint(q) != fmt.Sprint(wantQueries) {
		t.Errorf("queries %q, want the lookup of the share root's mapping %q", q, wantQueries)
	}
	calls := w.Calls()
	if len(calls) != 1 {
		t.Fatalf("made %d WMI calls, want the mapping's Create (the link is a Win32 call): %+v", len(calls), calls)
	}
	wantIn := map[string]any{"RemotePath": `\\srv\share`, "RequirePrivacy": true, "Credential": `DOM\\u:p'$(x)"`}
	if c := calls[0]; c.Method != "MSFT_SmbGlobalMapping.Create" || c.Namespace != wmi.NamespaceSMB || fmt.Sprint(c.In) != fmt.Sprint(wantIn) {
		t.Errorf("called %s in %s with %v, want MSFT_SmbGlobalMapping.Create with %v", c.Method, c.Namespace, c.In, wantIn)
	}
	if u := w.smb.User(`\\srv\share`); u != `DOM\u` {
		t.Errorf("the share is mapped for %q, want DOM\\u", u)
	}
	link, err := host.ReadReparsePoint(`C:\var\lib\kubelet\plugins\smb\pv\globalmount`)
	if err != nil {
		t.Fatalf("the link to the share was not created: %v", err)
	}
	if rp, err := win32.ParseReparsePoint(link); err != nil || rp.SubstituteName != `\??\UNC\srv\share\dir\` {
		t.Fatalf("the link leads to %+v (%v), want the share's directory with its trailing backslash", rp, err)
	}

	w.iscsi.AddPortal("10.0.0.5", 3261)
	portals, err := iscsiv1alpha2.NewIscsiClient(r.dial(t, "iscsi", "v1alpha2")).ListTargetPortals(ctx, &iscsiv1alpha2.ListTargetPortalsRequest{})
	if err != nil || len(portals.GetTargetPortals()) != 1 || portals.TargetPortals[0].GetTargetAddress() != "10.0.0.5" || portals.TargetPortals[0].GetTargetPort() != 3261 {
		t.Fatalf("ListTargetPortals = %v, %v; want the host's portal 10.0.0.5:3261", portals, err)
	}

	locs, err := diskv1.NewDiskClient(r.dial(t, "disk", "v1")).ListDiskLocations(ctx, &diskv1.ListDiskLocationsRequest{})
	if err != nil || locs.DiskLocations[1].GetLUNID() != "1" || locs.DiskLocations[1].GetAdapter() != "3" {
		t.Fatalf("ListDiskLocations = %v, %v", locs, err)
	}
	stats, err := volv1beta2.NewVolumeClient(r.dial(t, "volume", "v1beta2")).VolumeStats(ctx, &volv1beta2.VolumeStatsRequest{VolumeId: volumeID})
	if err != nil || stats.VolumeSize != 100 || stats.VolumeUsedSize != 60 {
		t.Fatalf("VolumeStats = %v, %v", stats, err)
	}
	// Allowed services compare case-insensitively, as Windows names do.
	if _, err := sysv1alpha1.NewSystemClient(r.dial(t, "system", "v1alpha1")).StartService(ctx, &sysv1alpha1.StartServiceRequest{Name: "csiproxy-helper"}); err != nil {
		t.Fatalf("StartService of an allowed service: %v", err)
	}
	if got := sys.calls(); fmt.Sprint(got) != "[StartService csiproxy-helper]" {
		t.Fatalf("system host calls %q, want the service started by the name the caller gave", got)
	}
}

// TestHostFailureIsUnknown keeps CSI Proxy's error shape for failures of the
// host operation: codes.Unknown with the error text, here the method's
// documented return code and the provider's extended status.
func TestHostFailureIsUnknown(t *testing.T) {
	r, w := windowsAgent(t)
	w.addVolume(2, volumeID, "")
	w.storage.Fail("MSFT_Volume.Format", 40001, "the caller may not format this volume")
	_, err := volv1.NewVolumeClient(r.dial(t, "volume", "v1")).FormatVolume(context.Background(), &volv1.FormatVolumeRequest{VolumeId: volumeID})
	want := "formatting volume " + volumeID + ": MSFT_Volume.Format returned 40001 (Access denied): the caller may not format this volume"
	wantStatus(t, err, codes.Unknown, want)
	if msg := status.Convert(err).Message(); msg != want {
		t.Fatalf("message %q, want %q", msg, want)
	}
	if f := w.storage.Prop(w.Instances(wmi.NamespaceStorage, "MSFT_Volume")[1], "FileSystem"); f != "" {
		t.Fatalf("the volume whose format failed reads as formatted %v", f)
	}
}
