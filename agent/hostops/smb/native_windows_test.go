package smb

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/pipeguard/pipeguard/agent/hostops/limits"
	"github.com/pipeguard/pipeguard/agent/hostops/win32"
	"github.com/pipeguard/pipeguard/internal/testing/platform"
	"github.com/pipeguard/pipeguard/internal/testing/wmitest"
)

// The native operations on the host's own Sys, on local folders standing
// in for a share.
func TestNativeOnTheHost(t *testing.T) {
	ctx := context.Background()
	p := wmitest.New()
	n := Native{deps: Deps{Sys: win32.New(), Limits: limits.Bound("smb", limits.Limits{Timeout: 30 * time.Second, Concurrency: 8}), Cmdlets: WMI{Conn: p}}}
	dir := t.TempDir()
	if ok, err := n.PathValid(ctx, dir); err != nil || !ok {
		t.Fatalf("PathValid(%s) = %v, %v", dir, ok, err)
	}
	if ok, err := n.PathValid(ctx, filepath.Join(dir, "missing")); err != nil || ok {
		t.Fatalf("PathValid of a missing folder = %v, %v", ok, err)
	}
	target := filepath.Join(dir, "share")
	if err := os.Mkdir(target, 0o755); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "link")
	if err := n.NewLink(ctx, target, link); err != nil {
		if platform.UnderWine() {
			t.Skipf("Wine cannot create the link: %v", err)
		}
		t.Fatal(err)
	}
	got, err := os.Readlink(link)
	if err != nil && platform.UnderWine() {
		t.Skipf("Wine cannot read back the link it created: %v", err)
	}
	if err != nil || got != target+`\` {
		t.Fatalf("the link reads %q, %v; want %q", got, err, target+`\`)
	}
	if calls, queries := p.Calls(), p.Queries(); len(calls) != 0 || len(queries) != 0 {
		t.Fatalf("went through WMI: calls %v, queries %q", calls, queries)
	}
}
