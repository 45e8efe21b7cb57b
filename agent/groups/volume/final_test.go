package volume

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/pipeguard/pipeguard/agent/confine"
	hostvol "github.com/pipeguard/pipeguard/agent/hostops/volume"
	"github.com/pipeguard/pipeguard/internal/testing/win32test"
	"github.com/pipeguard/pipeguard/internal/testing/wmitest"
)

// Every path the volume group hands to a host command is refused when a
// link planted in the root leads it out, under each field name, before any
// command runs.
func TestPathsThroughALinkOutOfTheRootsAreRefused(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("plants POSIX links")
	}
	root, outside := t.TempDir(), t.TempDir()
	if err := os.Symlink(outside, filepath.Join(root, "out")); err != nil {
		t.Fatal(err)
	}
	conf, err := confine.New(confine.Options{Flavour: confine.Linux, Roots: []string{root}})
	if err != nil {
		t.Fatal(err)
	}
	f, host := wmitest.New(), win32test.New()
	wmitest.AddStorage(f)
	s, err := New(nativeHost(t, hostvol.Deps{Sys: host, Cmdlets: hostvol.WMI{Conn: f}}), conf)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	p := filepath.Join(root, "out", "mount")
	calls := map[string]func(field string) error{
		"MountVolume":   func(field string) error { return s.MountVolume(ctx, testVolume, field, p) },
		"UnmountVolume": func(field string) error { return s.UnmountVolume(ctx, testVolume, field, p) },
		"GetVolumeIDFromTargetPath": func(field string) error {
			_, err := s.GetVolumeIDFromTargetPath(ctx, field, p)
			return err
		},
	}
	fields := map[string][]string{
		"MountVolume":               {"path", "target_path"},
		"UnmountVolume":             {"path", "target_path"},
		"GetVolumeIDFromTargetPath": {"target_path", "mount"},
	}
	for name, call := range calls {
		for _, field := range fields[name] {
			var ref *confine.Refusal
			if err := call(field); !errors.As(err, &ref) || ref.Rule != confine.RuleSymlinkEscape || ref.Field != field {
				t.Errorf("%s %s through a link out of the root: %v, want a %s refusal of %s", name, field, err, confine.RuleSymlinkEscape, field)
			}
		}
	}
	if calls, queries := f.Calls(), f.Queries(); len(calls) != 0 || len(queries) != 0 {
		t.Fatalf("made the WMI calls %+v and queries %q, want none", calls, queries)
	}
	if calls := host.Calls(); len(calls) != 0 {
		t.Fatalf("made Win32 calls %+v, want none", calls)
	}
}
