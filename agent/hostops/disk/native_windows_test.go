package disk

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/pipeguard/pipeguard/agent/hostops/limits"
	"github.com/pipeguard/pipeguard/agent/hostops/win32"
	"github.com/pipeguard/pipeguard/internal/testing/platform"
	"github.com/pipeguard/pipeguard/internal/testing/wmitest"
)

// The native operations on the host's own Sys. Under Wine, whose
// \\.\PhysicalDrive0 answers only a bare STORAGE_DEVICE_DESCRIPTOR, the
// lists hold no location and empty identifiers, and the size is skipped
// with Wine's answer.
func TestNativeOnTheHost(t *testing.T) {
	ctx := context.Background()
	p := wmitest.New()
	n := Native{deps: Deps{Sys: win32.New(), Limits: limits.Bound("disk", limits.Limits{Timeout: 30 * time.Second, Concurrency: 8}), Cmdlets: WMI{Conn: p},
		// The host's own answers are ones the decoders must read.
		Skipped: func(listing string, err error) { t.Errorf("%s left out a disk: %v", listing, err) }}}
	locs, err := n.ListDiskLocations(ctx)
	if err != nil {
		t.Fatalf("ListDiskLocations: %v", err)
	}
	ids, err := n.ListDiskIDs(ctx)
	if err != nil {
		t.Fatalf("ListDiskIDs: %v", err)
	}
	t.Logf("locations %v, identifiers %v", locs, ids)
	if calls, queries := p.Calls(), p.Queries(); len(calls) != 0 || len(queries) != 0 {
		t.Fatalf("went through WMI: calls %v, queries %q", calls, queries)
	}
	for d := range ids {
		t.Run(fmt.Sprintf("GetDiskStats(%d)", d), func(t *testing.T) {
			size, err := n.GetDiskStats(ctx, d)
			switch {
			case err != nil && platform.UnderWine():
				t.Skipf("Wine cannot tell a disk's size: %v", err)
			case err != nil && strings.Contains(err.Error(), "Access is denied"):
				t.Skipf("opening a disk for reading needs administrator rights: %v", err)
			case err != nil || size <= 0:
				t.Fatalf("GetDiskStats(%d) = %d, %v", d, size, err)
			}
			t.Logf("disk %d: %d bytes", d, size)
		})
	}
}
