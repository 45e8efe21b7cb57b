package volume

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/pipeguard/pipeguard/agent/hostops/limits"
	"github.com/pipeguard/pipeguard/agent/hostops/win32"
	"github.com/pipeguard/pipeguard/internal/testing/platform"
	"github.com/pipeguard/pipeguard/internal/testing/wmitest"
)

// The native operations on the host's own Sys, on the volume of C:. Under
// Wine what Wine does not implement is skipped with its answer.
func TestNativeOnTheHost(t *testing.T) {
	ctx := context.Background()
	prov := wmitest.New()
	n := Native{deps: Deps{Sys: win32.New(), Limits: limits.Bound("volume", limits.Limits{Timeout: 30 * time.Second, Concurrency: 8}), Cmdlets: WMI{Conn: prov},
		// The host's own answers are ones the decoders must read.
		Skipped: func(listing string, err error) { t.Errorf("%s left out a volume: %v", listing, err) }}}
	c, err := win32.New().VolumeNameForMountPoint(`C:\`)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{`C:\windows\system32`, `C:\`, `c:/windows`} {
		v, err := n.GetClosestVolumeIDFromTargetPath(ctx, p)
		if err != nil || !strings.EqualFold(v, c) {
			t.Fatalf("GetClosestVolumeIDFromTargetPath(%s) = %q, %v; want %s", p, v, err, c)
		}
	}
	if ok, err := n.IsVolumeFormatted(ctx, c); err != nil || !ok {
		t.Fatalf("IsVolumeFormatted(%s) = %v, %v", c, ok, err)
	}
	total, used, err := n.GetVolumeStats(ctx, c)
	if err != nil || total <= 0 || used < 0 || used > total {
		t.Fatalf("GetVolumeStats(%s) = %d, %d, %v", c, total, used, err)
	}
	_, err = n.GetVolumeIDFromTargetPath(ctx, `C:\windows`)
	if want := `C:\windows is not a volume mount point`; err == nil || err.Error() != want {
		t.Fatalf("GetVolumeIDFromTargetPath of a plain folder: %v, want %q", err, want)
	}
	if _, err := n.ListVolumesOnDisk(ctx, 0, 0); err != nil {
		t.Fatalf("ListVolumesOnDisk(0, 0): %v", err)
	}
	if calls, queries := prov.Calls(), prov.Queries(); len(calls) != 0 || len(queries) != 0 {
		t.Fatalf("went through WMI: calls %v, queries %q", calls, queries)
	}
	t.Run("GetDiskNumberFromVolumeID", func(t *testing.T) {
		d, err := n.GetDiskNumberFromVolumeID(ctx, c)
		if err != nil && platform.UnderWine() {
			t.Skipf("Wine cannot tell where a volume lies: %v", err)
		}
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("C: is on disk %d", d)
	})
	t.Run("WriteVolumeCache", func(t *testing.T) {
		err := n.WriteVolumeCache(ctx, c)
		if err != nil && platform.UnderWine() {
			t.Skipf("Wine cannot flush a volume: %v", err)
		}
		if err != nil && strings.Contains(err.Error(), "Access is denied") {
			t.Skipf("flushing a volume needs administrator rights: %v", err)
		}
		if err != nil {
			t.Fatal(err)
		}
	})
}
