package volume

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"google.golang.org/grpc/codes"

	"github.com/pipeguard/pipeguard/agent/apierr"
	"github.com/pipeguard/pipeguard/agent/confine"
	hostvol "github.com/pipeguard/pipeguard/agent/hostops/volume"
	"github.com/pipeguard/pipeguard/agent/hostops/win32"
	"github.com/pipeguard/pipeguard/internal/testing/win32test"
	"github.com/pipeguard/pipeguard/internal/testing/wmitest"
)

const (
	testVolume  = `\\?\Volume{452e318a-5cde-421e-9831-b9853c521012}\`
	publishPath = `C:\var\lib\kubelet\pods\6f1c\volumes\kubernetes.io~csi\pvc-1\mount`
	stagingPath = `C:\var\lib\kubelet\plugins\kubernetes.io\csi\disk.csi.azure.com\0a1b\globalmount`
)

// linkServer returns a volume Server over a fake host where each path of
// links is a reparse point: a mount point when its target is a volume
// (Volume{GUID}\), a symbolic link otherwise. The cmdlets run on a WMI
// provider of the storage classes, where testVolume is a formatted volume.
func linkServer(t *testing.T, links map[string]string) (*Server, *wmitest.Provider, *win32test.Host) {
	t.Helper()
	f, host := wmitest.New(), win32test.New()
	st := wmitest.AddStorage(f)
	st.AddVolume(st.AddPartition(st.AddDisk(1, 8<<30, 2), 4<<30, wmitest.GPTBasicData), testVolume, "NTFS")
	for path, target := range links {
		if strings.HasPrefix(target, "Volume{") {
			host.SetReparseData(path, win32test.MountPointReparse(`\??\`+target, ""))
			continue
		}
		if err := host.Symlink(target, path); err != nil {
			t.Fatal(err)
		}
	}
	conf, err := confine.New(confine.Options{Flavour: confine.Windows, Roots: []string{`C:\var\lib\kubelet`}})
	if err != nil {
		t.Fatal(err)
	}
	s, err := New(nativeHost(t, hostvol.Deps{Sys: host, Cmdlets: hostvol.WMI{Conn: f}}), conf)
	if err != nil {
		t.Fatal(err)
	}
	return s, f, host
}

// readTargets returns the paths whose reparse point was read.
func readTargets(host *win32test.Host) []string {
	var paths []string
	for _, c := range host.Calls() {
		if c.Func == win32.DeviceIoControlFunc(win32.FSCTL_GET_REPARSE_POINT) {
			paths = append(paths, c.Path)
		}
	}
	return paths
}

// A publish path is a link to the staging mount: its volume is the staging
// mount's, as with CSI Proxy, under both version names of the method.
func TestGetVolumeIDFromTargetPathFollowsPublishLinkToStagingMount(t *testing.T) {
	for _, field := range []string{"target_path", "mount"} {
		s, _, host := linkServer(t, map[string]string{
			publishPath: stagingPath,
			stagingPath: `Volume{452e318a-5cde-421e-9831-b9853c521012}\`,
		})
		got, err := s.GetVolumeIDFromTargetPath(context.Background(), field, publishPath)
		if err != nil || got != testVolume {
			t.Fatalf("%s: GetVolumeIDFromTargetPath = %q, %v; want %q", field, got, err, testVolume)
		}
		want := []string{publishPath, stagingPath}
		if fmt.Sprint(readTargets(host)) != fmt.Sprint(want) {
			t.Fatalf("%s: read %q, want %q", field, readTargets(host), want)
		}
	}
}

func TestGetVolumeIDFromTargetPathRefusesLinkLeavingTheRoots(t *testing.T) {
	for target, rule := range map[string]confine.Rule{
		`C:\Windows\System32`:     confine.RuleSymlinkEscape,
		`C:\var\lib\kubeletX\pod`: confine.RuleSymlinkEscape,
	} {
		s, _, host := linkServer(t, map[string]string{publishPath: target})
		_, err := s.GetVolumeIDFromTargetPath(context.Background(), "target_path", publishPath)
		var ref *confine.Refusal
		if !errors.As(err, &ref) || ref.Rule != rule || ref.Field != "target_path" || ref.Path != publishPath ||
			!strings.Contains(ref.Reason, "links to "+confine.Quote(target)) {
			t.Fatalf("link to %s: err = %v, want a %s refusal of the publish path", target, err, rule)
		}
		if apierr.Code(err) != codes.PermissionDenied {
			t.Fatalf("link to %s: code %s", target, apierr.Code(err))
		}
		if got := readTargets(host); fmt.Sprint(got) != fmt.Sprint([]string{publishPath}) {
			t.Fatalf("link to %s: read %q, want only the publish path", target, got)
		}
	}
}

func TestGetVolumeIDFromTargetPathLinkToShareIsNotAVolume(t *testing.T) {
	s, _, host := linkServer(t, map[string]string{publishPath: `\\srv\share\`})
	_, err := s.GetVolumeIDFromTargetPath(context.Background(), "target_path", publishPath)
	var link *hostvol.LinkError
	if !errors.As(err, &link) || link.Target != `\\srv\share\` {
		t.Fatalf("err = %v, want the publish path's link to the share", err)
	}
	if n := len(readTargets(host)); n != 1 {
		t.Fatalf("read %d reparse points, want 1", n)
	}
}

func TestGetVolumeIDFromTargetPathStopsOnLinkLoops(t *testing.T) {
	s, _, host := linkServer(t, map[string]string{publishPath: stagingPath, stagingPath: publishPath})
	_, err := s.GetVolumeIDFromTargetPath(context.Background(), "target_path", publishPath)
	if err == nil || !strings.Contains(err.Error(), "more than 8 links") {
		t.Fatalf("err = %v", err)
	}
	if n := len(readTargets(host)); n != maxTargetLinks+1 {
		t.Fatalf("read %d reparse points, want %d", n, maxTargetLinks+1)
	}
}

// Mount targets are handed to the command as confined: cleaned, and refused
// outside the roots before anything runs.
func TestMountTargetsHandedToTheCommandAreConfined(t *testing.T) {
	s, f, host := linkServer(t, nil)
	host.AddVolume(win32test.Volume{ID: testVolume, FileSystem: "NTFS"})
	host.AddDrive(`C:\`, systemVolume)
	ctx := context.Background()
	if err := s.MountVolume(ctx, testVolume, "target_path", `C:\var\lib\kubelet\\plugins\x\globalmount`); err != nil {
		t.Fatal(err)
	}
	if got, want := fmt.Sprint(host.MountPoints()), fmt.Sprint(map[string]string{`C:\var\lib\kubelet\plugins\x\globalmount\`: testVolume}); got != want {
		t.Fatalf("mount points %s, want %s", got, want)
	}
	if err := s.UnmountVolume(ctx, testVolume, "path", `C:\var\lib\kubelet\plugins\x\globalmount\`); err != nil {
		t.Fatal(err)
	}
	if got := host.MountPoints(); len(got) != 0 {
		t.Fatalf("mount points %v after UnmountVolume, want none", got)
	}
	var ref *confine.Refusal
	if err := s.MountVolume(ctx, testVolume, "target_path", `C:\Windows\x`); !errors.As(err, &ref) || ref.Rule != confine.RuleOutsideRoots {
		t.Fatalf("MountVolume outside the roots: %v", err)
	}
	if n := len(host.MountPoints()); n != 0 {
		t.Fatalf("%d mount points after a refused MountVolume, want none", n)
	}
	if calls, queries := f.Calls(), f.Queries(); len(calls) != 0 || len(queries) != 0 {
		t.Fatalf("mounting made the WMI calls %+v and queries %q, want none", calls, queries)
	}
}

// A relative link is not followed: its target names no absolute path to
// confine, so the answer is that the path is not a volume, and nothing past
// the link is read, however many ".." it holds.
func TestGetVolumeIDFromTargetPathDoesNotFollowARelativeLink(t *testing.T) {
	s, _, host := linkServer(t, map[string]string{publishPath: `..\..\..\..\..\..\..\Windows\System32`})
	_, err := s.GetVolumeIDFromTargetPath(context.Background(), "target_path", publishPath)
	var link *hostvol.LinkError
	if !errors.As(err, &link) || link.Target != `..\..\..\..\..\..\..\Windows\System32` {
		t.Fatalf("err = %v, want the publish path's relative link, unfollowed", err)
	}
	if got := readTargets(host); fmt.Sprint(got) != fmt.Sprint([]string{publishPath}) {
		t.Fatalf("read %q, want only the publish path", got)
	}
}
