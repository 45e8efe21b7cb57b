package volume

import (
	"context"
	"errors"
	"strings"
	"testing"

	"google.golang.org/grpc/codes"

	"github.com/pipeguard/pipeguard/agent/apierr"
	"github.com/pipeguard/pipeguard/agent/confine"
	hostvol "github.com/pipeguard/pipeguard/agent/hostops/volume"
	"github.com/pipeguard/pipeguard/internal/testing/win32test"
	"github.com/pipeguard/pipeguard/internal/testing/wmitest"
)

const (
	systemVolume  = `\\?\Volume{00000000-0000-0000-0000-00000000000c}\`
	kubeletVolume = `\\?\Volume{00000000-0000-0000-0000-00000000000b}\`
	workVolume    = `\\?\Volume{00000000-0000-0000-0000-00000000000d}\`
)

// protectServer is a volume Server over a fake host whose C: is the
// system volume, whose kubelet directory is a volume of its own mounted
// in a folder, and whose working dir D:\csi lies on D:.
func protectServer(t *testing.T) (*Server, *win32test.Host) {
	t.Helper()
	s, host, _ := protectServerCmdlets(t)
	return s, host
}

// protectServerCmdlets is protectServer that also returns the WMI
// provider of its cmdlets, where each of the four volumes is one of the
// storage provider's, on a partition of a disk of its own, that Format
// would format.
func protectServerCmdlets(t *testing.T) (*Server, *win32test.Host, *wmitest.Provider) {
	t.Helper()
	prov := wmitest.New()
	st := wmitest.AddStorage(prov)
	for i, v := range []string{testVolume, systemVolume, kubeletVolume, workVolume} {
		st.AddVolume(st.AddPartition(st.AddDisk(uint32(i+1), 8<<30, 2), 4<<30, wmitest.GPTBasicData), v, "NTFS")
	}
	host := win32test.New()
	host.AddDrive(`C:\`, systemVolume)
	host.AddDrive(`D:\`, workVolume)
	host.SetReparseData(`C:\var\lib\kubelet`, win32test.MountPointReparse(`\??\Volume{00000000-0000-0000-0000-00000000000b}\`, ""))
	for _, v := range []string{testVolume, systemVolume, kubeletVolume, workVolume} {
		host.AddVolume(win32test.Volume{ID: v, FileSystem: "NTFS"})
	}
	conf, err := confine.New(confine.Options{Flavour: confine.Windows, Roots: []string{`C:\var\lib\kubelet`, `D:\csi`}})
	if err != nil {
		t.Fatal(err)
	}
	s, err := New(nativeHost(t, hostvol.Deps{Sys: host, Cmdlets: hostvol.WMI{Conn: prov}}), conf)
	if err != nil {
		t.Fatal(err)
	}
	return s, host, prov
}

// TestMountVolumeRefusesTheNodesVolumes: the system volume, the kubelet
// directory's volume and a working dir's are never mounted, however their
// GUID is spelt; a workload's volume is; a volume the host cannot tell
// apart from them is refused, not mounted.
func TestMountVolumeRefusesTheNodesVolumes(t *testing.T) {
	const target = `C:\var\lib\kubelet\plugins\kubernetes.io\csi\drv\h\globalmount`
	holds := func(vol, p string) string {
		return "volume_id: volume " + vol + ` holds "` + p + `", which the node depends on; MountVolume mounts only volumes that hold neither the Windows directory, nor the kubelet directory or a working dir, nor the agent: mount a volume of the workload's own disk (rule protected-volume)`
	}
	cases := map[string]struct{ volume, want string }{
		"a workload's volume":   {volume: testVolume},
		"the system volume":     {volume: systemVolume, want: holds(systemVolume, DefaultSystemRoot)},
		"system, in upper case": {volume: `\\?\Volume{00000000-0000-0000-0000-00000000000C}\`, want: holds(`\\?\Volume{00000000-0000-0000-0000-00000000000C}\`, DefaultSystemRoot)},
		"the kubelet's volume":  {volume: kubeletVolume, want: holds(kubeletVolume, `C:\var\lib\kubelet`)},
		"a working dir's":       {volume: workVolume, want: holds(workVolume, `D:\csi`)},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			s, host := protectServer(t)
			err := s.MountVolume(context.Background(), tc.volume, "target_path", target)
			if tc.want == "" {
				if err != nil || host.MountPoints()[target+`\`] != tc.volume {
					t.Fatalf("err %v, mount points %v", err, host.MountPoints())
				}
				return
			}
			var d *apierr.Denied
			if !errors.As(err, &d) || err.Error() != tc.want || apierr.Code(err) != codes.PermissionDenied {
				t.Fatalf("err %v\nwant %s", err, tc.want)
			}
			if n := len(host.MountPoints()); n != 0 {
				t.Fatalf("%d mount points after a refusal", n)
			}
		})
	}

	// Fail closed: a host that cannot say which volume holds C:\Windows
	// mounts nothing.
	host := win32test.New()
	host.AddVolume(win32test.Volume{ID: testVolume, FileSystem: "NTFS"})
	conf, _ := confine.New(confine.Options{Flavour: confine.Windows, Roots: []string{`C:\var\lib\kubelet`}})
	s, _ := New(nativeHost(t, hostvol.Deps{Sys: host, Cmdlets: hostvol.WMI{Conn: wmitest.New()}}), conf)
	err := s.MountVolume(context.Background(), testVolume, "target_path", target)
	want := "volume_id: could not tell whether volume " + testVolume + ` is the one holding "C:\Windows" (`
	if !errors.As(err, new(*apierr.Denied)) || !strings.HasPrefix(err.Error(), want) ||
		!strings.HasSuffix(err.Error(), `), so it was not mounted; retry, or check the volume of "C:\Windows" on the host (rule protected-volume)`) {
		t.Fatalf("err %v, want %q...", err, want)
	}
	if n := len(host.MountPoints()); n != 0 {
		t.Fatalf("%d mount points after a refusal", n)
	}
}

// TestMountVolumePodLink: a volume mount point is placed in a pod's
// directory on the terms of CreateSymlink's links (rule pod-link): at a
// publish path by anyone, in the caller's own pod directory, anywhere by
// the host, and nowhere else in a pod's directory.
func TestMountVolumePodLink(t *testing.T) {
	const k = `C:\var\lib\kubelet`
	podA := confine.Caller{Kind: confine.CallerInPod, Pod: "aaaa"}
	other := func(path, who string) string {
		return `target_path: path "` + path + `" lies in the directory of pod bbbb (` + k + `\pods\bbbb), and ` + who +
			`; a link may be placed in a pod's directory only by that pod, by a process on the host, or at the pod's CSI publish path ` + k + `\pods\bbbb\volumes\kubernetes.io~csi\<volume>\mount (confinement rule pod-link)`
	}
	cases := map[string]struct {
		caller confine.Caller
		target string
		want   string
	}{
		"another pod's publish path": {caller: podA, target: k + `\pods\bbbb\volumes\kubernetes.io~csi\pv\mount`},
		"own pod's directory":        {caller: podA, target: k + `\pods\aaaa\volumes\kubernetes.io~empty-dir\x\m`},
		"staging path":               {caller: confine.Caller{}, target: k + `\plugins\kubernetes.io\csi\drv\h\globalmount`},
		"host, another pod's":        {caller: confine.Caller{Kind: confine.CallerOnHost}, target: k + `\pods\bbbb\m`},
		"another pod's emptyDir": {caller: podA, target: k + `\pods\bbbb\volumes\kubernetes.io~empty-dir\x\m`,
			want: other(k+`\pods\bbbb\volumes\kubernetes.io~empty-dir\x\m`, "the caller runs in pod aaaa")},
		"another pod's directory, other case": {caller: podA, target: k + `\PODS\BBBB\etc-hosts`,
			want: `target_path: path "` + k + `\PODS\BBBB\etc-hosts" lies in the directory of pod BBBB (` + k + `\pods\BBBB), and the caller runs in pod aaaa; a link may be placed in a pod's directory only by that pod, by a process on the host, or at the pod's CSI publish path ` + k + `\pods\BBBB\volumes\kubernetes.io~csi\<volume>\mount (confinement rule pod-link)`},
		"unattributed, not a publish path": {caller: confine.Caller{}, target: k + `\pods\bbbb\m`,
			want: other(k+`\pods\bbbb\m`, "the caller could not be attributed to a pod")},
		"a new pod's directory": {caller: podA, target: k + `\pods\bbbb`,
			want: other(k+`\pods\bbbb`, "the caller runs in pod aaaa")},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			s, host := protectServer(t)
			ctx := confine.WithCaller(context.Background(), tc.caller)
			err := s.MountVolume(ctx, testVolume, "target_path", tc.target)
			if tc.want == "" {
				if err != nil || len(host.MountPoints()) != 1 {
					t.Fatalf("err %v, mount points %v", err, host.MountPoints())
				}
				if err := s.UnmountVolume(ctx, testVolume, "target_path", tc.target); err != nil || len(host.MountPoints()) != 0 {
					t.Fatalf("UnmountVolume: err %v, mount points %v", err, host.MountPoints())
				}
				return
			}
			// The same caller cannot take away a mount point it could
			// not have placed.
			if uerr := s.UnmountVolume(ctx, testVolume, "target_path", tc.target); uerr == nil || uerr.Error() != tc.want {
				t.Fatalf("UnmountVolume: err %v\nwant %s", uerr, tc.want)
			}
			var r *confine.Refusal
			if !errors.As(err, &r) || r.Rule != confine.RulePodLink || err.Error() != tc.want {
				t.Fatalf("err %v\nwant %s", err, tc.want)
			}
			if n := len(host.MountPoints()); n != 0 {
				t.Fatalf("%d mount points after a refusal", n)
			}
		})
	}
}

// TestFormatVolumeRefusesTheNodesVolumes: the volumes MountVolume refuses
// are never formatted either, and nothing runs for them; a workload's
// volume is formatted.
func TestFormatVolumeRefusesTheNodesVolumes(t *testing.T) {
	holds := func(vol, p string) string {
		return "volume_id: volume " + vol + ` holds "` + p + `", which the node depends on; FormatVolume formats only volumes that hold neither the Windows directory, nor the kubelet directory or a working dir, nor the agent: format a volume of the workload's own disk (rule protected-volume)`
	}
	cases := map[string]struct{ volume, want string }{
		"a workload's volume":  {volume: testVolume},
		"the system volume":    {volume: systemVolume, want: holds(systemVolume, DefaultSystemRoot)},
		"the kubelet's volume": {volume: kubeletVolume, want: holds(kubeletVolume, `C:\var\lib\kubelet`)},
		"a working dir's":      {volume: workVolume, want: holds(workVolume, `D:\csi`)},
		"system, in upper case": {volume: `\\?\Volume{00000000-0000-0000-0000-00000000000C}\`,
			want: holds(`\\?\Volume{00000000-0000-0000-0000-00000000000C}\`, DefaultSystemRoot)},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			s, _, prov := protectServerCmdlets(t)
			err := s.FormatVolume(context.Background(), tc.volume)
			if tc.want == "" {
				if err != nil || len(formats(prov)) != 1 {
					t.Fatalf("err %v, calls %+v; want one format", err, prov.Calls())
				}
				return
			}
			if !errors.As(err, new(*apierr.Denied)) || err.Error() != tc.want || apierr.Code(err) != codes.PermissionDenied {
				t.Fatalf("err %v\nwant %s", err, tc.want)
			}
			if calls, queries := prov.Calls(), prov.Queries(); len(calls) != 0 || len(queries) != 0 {
				t.Fatalf("a refused format made the WMI calls %+v and queries %q", calls, queries)
			}
		})
	}

	// Fail closed: a host that cannot say which volume holds C:\Windows
	// formats nothing.
	host := win32test.New()
	host.AddVolume(win32test.Volume{ID: testVolume, FileSystem: "NTFS"})
	conf, _ := confine.New(confine.Options{Flavour: confine.Windows, Roots: []string{`C:\var\lib\kubelet`}})
	prov := wmitest.New()
	st := wmitest.AddStorage(prov)
	st.AddVolume(st.AddPartition(st.AddDisk(1, 8<<30, 2), 4<<30, wmitest.GPTBasicData), testVolume, "NTFS")
	s, _ := New(nativeHost(t, hostvol.Deps{Sys: host, Cmdlets: hostvol.WMI{Conn: prov}}), conf)
	err := s.FormatVolume(context.Background(), testVolume)
	if !errors.As(err, new(*apierr.Denied)) || !strings.HasSuffix(err.Error(), `), so it was not formatted; retry, or check the volume of "C:\Windows" on the host (rule protected-volume)`) {
		t.Fatalf("err %v; want the refusal of a volume the host cannot place", err)
	}
	if calls, queries := prov.Calls(), prov.Queries(); len(calls) != 0 || len(queries) != 0 {
		t.Fatalf("a refused format made the WMI calls %+v and queries %q", calls, queries)
	}
}

// formats returns the MSFT_Volume.Format calls the provider ran.
func formats(p *wmitest.Provider) []wmitest.Call {
	var out []wmitest.Call
	for _, c := range p.Calls() {
		if c.Method == "MSFT_Volume.Format" {
			out = append(out, c)
		}
	}
	return out
}
