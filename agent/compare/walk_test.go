package compare_test

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/pipeguard/pipeguard/agent/compare"
)

func mkdir(t *testing.T, parts ...string) string {
	t.Helper()
	p := filepath.Join(parts...)
	if err := os.MkdirAll(p, 0o755); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestFindMountPoints finds the kubelet's target folders and links, does
// not descend into them, and stops at MaxDepth.
func TestFindMountPoints(t *testing.T) {
	root := t.TempDir()
	publish := mkdir(t, root, "pods", "uid", "volumes", "kubernetes.io~csi", "pv", "mount")
	mkdir(t, publish, "inside", "mount") // inside a target: not walked
	stage := mkdir(t, root, "plugins", "kubernetes.io", "csi", "driver", "hash", "globalmount")
	link := filepath.Join(root, "pods", "uid", "volumes", "kubernetes.io~csi", "pv2")
	if err := os.Symlink(stage, link); err != nil {
		t.Fatal(err)
	}
	deep := append([]string{root}, strings.Split("a/b/c/d/e/f/g/h/mount", "/")...)
	mkdir(t, deep...)
	paths, notes := compare.FindMountPoints(root)
	slices.Sort(paths)
	want := []string{stage, link, publish}
	slices.Sort(want)
	if !slices.Equal(paths, want) || len(notes) != 0 {
		t.Errorf("paths %q notes %q, want %q", paths, notes, want)
	}
}

// TestFindMountPointsBounds: a kubelet directory with more targets than
// MaxTargetPaths gives that many, and says so.
func TestFindMountPointsBounds(t *testing.T) {
	root := t.TempDir()
	for i := 0; i < compare.MaxTargetPaths+10; i++ {
		mkdir(t, root, fmt.Sprint(i), "mount")
	}
	paths, notes := compare.FindMountPoints(root)
	if len(paths) != compare.MaxTargetPaths || len(notes) != 1 || !strings.Contains(notes[0], "only the first 256 target paths") {
		t.Errorf("%d paths, notes %q", len(paths), notes)
	}
	paths, notes = compare.FindMountPoints(filepath.Join(root, "missing"))
	if len(paths) != 0 || len(notes) != 1 || !strings.Contains(notes[0], "cannot be read") {
		t.Errorf("missing root: %q %q", paths, notes)
	}
}
