package smb

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/pipeguard/pipeguard/agent/confine"
	hostsmb "github.com/pipeguard/pipeguard/agent/hostops/smb"
	"github.com/pipeguard/pipeguard/internal/testing/win32test"
	"github.com/pipeguard/pipeguard/internal/testing/wmitest"
)

// A local path led out of the roots by a link planted in them is refused
// before the share is mapped or linked.
func TestNewSmbGlobalMappingRefusesALocalPathThroughALinkOut(t *testing.T) {
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
	p, host := wmitest.New(), win32test.New()
	wmitest.AddSMB(p)
	s, err := New(nativeHost(t, hostsmb.Deps{Sys: host, Cmdlets: hostsmb.WMI{Conn: p}}), conf, true)
	if err != nil {
		t.Fatal(err)
	}
	var ref *confine.Refusal
	err = s.NewSmbGlobalMapping(context.Background(), shareRoot+`\vol`, filepath.Join(root, "out", "globalmount"), "user", "pass")
	if !errors.As(err, &ref) || ref.Rule != confine.RuleSymlinkEscape || ref.Field != "local_path" {
		t.Fatalf("local_path through a link out of the root: %v, want a %s refusal of local_path", err, confine.RuleSymlinkEscape)
	}
	if calls, queries := madeCalls(p), p.Queries(); len(calls) != 0 || len(queries) != 0 {
		t.Fatalf("made WMI calls %q and queries %q, want none", calls, queries)
	}
	if calls := host.Calls(); len(calls) != 0 {
		t.Fatalf("made Win32 calls %+v, want none", calls)
	}
}
