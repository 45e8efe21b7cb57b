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
	"github.com/pipeguard/pipeguard/agent/hostops/runner"
	hostvol "github.com/pipeguard/pipeguard/agent/hostops/volume"
)

const (
	testVolume  = `\\?\Volume{452e318a-5cde-421e-9831-b9853c521012}\`
	publishPath = `C:\var\lib\kubelet\pods\6f1c\volumes\kubernetes.io~csi\pvc-1\mount`
	stagingPath = `C:\var\lib\kubelet\plugins\kubernetes.io\csi\disk.csi.azure.com\0a1b\globalmount`
)

// linkServer returns a volume Server whose runner answers Get-Item with the
// link target of each path in links, and the fake runner.
func linkServer(t *testing.T, links map[string]string) (*Server, *runner.Fake) {
	t.Helper()
	f := &runner.Fake{Respond: func(c runner.Command) ([]byte, error) {
		for _, e := range c.Env {
			if p, ok := strings.CutPrefix(e, "targetpath="); ok {
				return []byte(links[p] + "\r\n"), nil
			}
		}
		return nil, fmt.Errorf("no target path in %q", c.Env)
	}}
	conf, err := confine.New(confine.Options{Flavour: confine.Windows, Roots: []string{`C:\var\lib\kubelet`}})
	if err != nil {
		t.Fatal(err)
	}
	s, err := New(hostvol.PowerShell{Runner: f}, conf)
	if err != nil {
		t.Fatal(err)
	}
	return s, f
}

func readTargets(f *runner.Fake) []string {
	var paths []string
	for _, c := range f.Commands() {
		paths = append(paths, strings.Join(c.Env, " "))
	}
	return paths
}

// A publish path is a link to the staging mount: its volume is the staging
// mount's, as with CSI Proxy, under both version names of the method.
func TestGetVolumeIDFromTargetPathFollowsPublishLinkToStagingMount(t *testing.T) {
	for _, field := range []string{"target_path", "mount"} {
		s, f := linkServer(t, map[string]string{
			publishPath: stagingPath,
			stagingPath: `Volume{452e318a-5cde-421e-9831-b9853c521012}\`,
		})
		got, err := s.GetVolumeIDFromTargetPath(context.Background(), field, publishPath)
		if err != nil || got != testVolume {
			t.Fatalf("%s: GetVolumeIDFromTargetPath = %q, %v; want %q", field, got, err, testVolume)
		}
		want := []string{"targetpath=" + publishPath, "targetpath=" + stagingPath}
		if fmt.Sprint(readTargets(f)) != fmt.Sprint(want) {
			t.Fatalf("%s: read %q, want %q", field, readTargets(f), want)
		}
	}
}

func TestGetVolumeIDFromTargetPathRefusesLinkLeavingTheRoots(t *testing.T) {
	for target, rule := range map[string]confine.Rule{
		`C:\Windows\System32`:     confine.RuleSymlinkEscape,
		`C:\var\lib\kubeletX\pod`: confine.RuleSymlinkEscape,
	} {
		s, f := linkServer(t, map[string]string{publishPath: target})
		_, err := s.GetVolumeIDFromTargetPath(context.Background(), "target_path", publishPath)
		var ref *confine.Refusal
		if !errors.As(err, &ref) || ref.Rule != rule || ref.Field != "target_path" || ref.Path != publishPath ||
			!strings.Contains(ref.Reason, "links to "+confine.Quote(target)) {
			t.Fatalf("link to %s: err = %v, want a %s refusal of the publish path", target, err, rule)
		}
		if apierr.Code(err) != codes.PermissionDenied {
			t.Fatalf("link to %s: code %s", target, apierr.Code(err))
		}
		if n := len(f.Commands()); n != 1 {
			t.Fatalf("link to %s: ran %d commands, want only the read of the publish path", target, n)
		}
	}
}

func TestGetVolumeIDFromTargetPathLinkToShareIsNotAVolume(t *testing.T) {
	s, f := linkServer(t, map[string]string{publishPath: `\\srv\share\`})
	_, err := s.GetVolumeIDFromTargetPath(context.Background(), "target_path", publishPath)
	var link *hostvol.LinkError
	if !errors.As(err, &link) || link.Target != `\\srv\share\` {
		t.Fatalf("err = %v, want the publish path's link to the share", err)
	}
	if n := len(f.Commands()); n != 1 {
		t.Fatalf("ran %d commands, want 1", n)
	}
}

func TestGetVolumeIDFromTargetPathStopsOnLinkLoops(t *testing.T) {
	s, f := linkServer(t, map[string]string{publishPath: stagingPath, stagingPath: publishPath})
	_, err := s.GetVolumeIDFromTargetPath(context.Background(), "target_path", publishPath)
	if err == nil || !strings.Contains(err.Error(), "more than 8 links") {
		t.Fatalf("err = %v", err)
	}
	if n := len(f.Commands()); n != maxTargetLinks+1 {
		t.Fatalf("ran %d commands, want %d", n, maxTargetLinks+1)
	}
}

// Mount targets are handed to the command as confined: cleaned, and refused
// outside the roots before anything runs.
func TestMountTargetsHandedToTheCommandAreConfined(t *testing.T) {
	s, f := linkServer(t, nil)
	ctx := context.Background()
	if err := s.MountVolume(ctx, testVolume, "target_path", `C:\var\lib\kubelet\\plugins\x\globalmount`); err != nil {
		t.Fatal(err)
	}
	if err := s.UnmountVolume(ctx, testVolume, "path", `C:\var\lib\kubelet\plugins\x\globalmount\`); err != nil {
		t.Fatal(err)
	}
	for i, c := range f.Commands() {
		if want := `targetpath=C:\var\lib\kubelet\plugins\x\globalmount`; c.Env[1] != want {
			t.Errorf("command %d: env %q, want %q", i, c.Env, want)
		}
	}
	var ref *confine.Refusal
	if err := s.MountVolume(ctx, testVolume, "target_path", `C:\Windows\x`); !errors.As(err, &ref) || ref.Rule != confine.RuleOutsideRoots {
		t.Fatalf("MountVolume outside the roots: %v", err)
	}
	if n := len(f.Commands()); n != 2 {
		t.Fatalf("ran %d commands, want 2", n)
	}
}
