//go:build !windows

package confine

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// TestParentReportsWhereTheHandleLanded swaps a directory resolved by Open
// for a link to another pod's directory before the link's directory is
// opened: Parent follows the link inside the root, and the place it
// reports is that other pod's directory, so that rule pod-link checks what
// the handle will create, not what Open saw.
func TestParentReportsWhereTheHandleLanded(t *testing.T) {
	k := t.TempDir()
	mine := filepath.Join(k, "pods", "aaaa", "volumes", "kubernetes.io~empty-dir", "x")
	theirs := filepath.Join(k, "pods", "bbbb", "etc")
	for _, d := range []string{filepath.Join(mine, "dir"), theirs} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	c := mustNew(t, Options{Flavour: Linux, Roots: []string{k}, Resolver: OSResolver{}})
	h, err := c.Open(filepath.Join(mine, "dir", "l"), ResolveParent)
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	if err := c.RefusePodLinkAt(Caller{Kind: CallerInPod, Pod: "aaaa"}, h.Path(), h.Abs()); err != nil {
		t.Fatalf("the pod's own directory: %v", err)
	}

	// The swap, after Open resolved the name, for a relative link: the
	// root handle follows those while they stay inside the root.
	rel, err := filepath.Rel(mine, theirs)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(mine, "dir")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(rel, filepath.Join(mine, "dir")); err != nil {
		t.Fatal(err)
	}
	dir, base, at, err := h.Parent()
	if err != nil {
		t.Fatal(err)
	}
	defer dir.Close()
	if want := filepath.Join(theirs, "l"); at != want || base != "l" {
		t.Fatalf("Parent() = %q, %q; want %q, l", at, base, want)
	}
	err = c.RefusePodLinkAt(Caller{Kind: CallerInPod, Pod: "aaaa"}, h.Path(), at)
	if want := `path "` + h.Path() + `" lies in the directory of pod bbbb (` + filepath.Join(k, "pods", "bbbb") + `), and the caller runs in pod aaaa; ` +
		`a link may be placed in a pod's directory only by that pod, by a process on the host, or at the pod's CSI publish path ` +
		filepath.Join(k, "pods", "bbbb") + `/volumes/kubernetes.io~csi/<volume>/mount (confinement rule pod-link)`; err == nil || err.Error() != want {
		t.Fatalf("after the swap: %v\nwant %s", err, want)
	}

	// A swap for a link out of the root is refused as an escape.
	if err := os.Remove(filepath.Join(mine, "dir")); err != nil {
		t.Fatal(err)
	}
	out, err := filepath.Rel(mine, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(out, filepath.Join(mine, "dir")); err != nil {
		t.Fatal(err)
	}
	var r *Refusal
	if _, _, _, err := h.Parent(); !errors.As(err, &r) || r.Rule != RuleSymlinkEscape {
		t.Fatalf("Parent through a link out of the root: %v, want symlink-escape", err)
	}
}
