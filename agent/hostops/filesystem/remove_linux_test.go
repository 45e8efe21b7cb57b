package filesystem

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/pipeguard/pipeguard/agent/confine"
)

// mountOrSkip mounts, with unix.Mount's arguments, and unmounts when the
// test ends, before its temp dirs are removed (which would otherwise walk
// into the mount). It skips the test where mounting is not allowed.
func mountOrSkip(t *testing.T, source, target, fstype string, flags uintptr) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("mounting needs root")
	}
	if err := unix.Mount(source, target, fstype, flags, ""); err != nil {
		t.Skipf("cannot mount here (an unprivileged container?): mount %s on %s: %v", source, target, err)
	}
	t.Cleanup(func() {
		if err := unix.Unmount(target, unix.MNT_DETACH); err != nil {
			t.Errorf("unmounting %s: %v", target, err)
		}
	})
}

// files creates each file with its content, and its directories.
func files(t *testing.T, dir string, names ...string) {
	t.Helper()
	for _, n := range names {
		p := filepath.Join(dir, n)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(n), 0o600); err != nil {
			t.Fatal(err)
		}
	}
}

// wantFiles fails unless every named file below dir still holds its name.
func wantFiles(t *testing.T, dir string, names ...string) {
	t.Helper()
	for _, n := range names {
		if b, err := os.ReadFile(filepath.Join(dir, n)); err != nil || string(b) != n {
			t.Errorf("%s: %q, %v; want it intact", filepath.Join(dir, n), b, err)
		}
	}
}

// TestRemovalNeverCrossesAMount mounts, inside a tree in the root, a bind
// mount of a directory outside the root on the same file system (same
// device, so st_dev cannot tell it apart), a tmpfs from outside the root,
// one deeper down, and a bind-mounted file. RmdirContents and Rmdir with
// force on the tree, on the mount point itself and below it are refused
// with rule mount-point and remove nothing, inside or outside.
func TestRemovalNeverCrossesAMount(t *testing.T) {
	base := t.TempDir()
	root := filepath.Join(base, "root")
	outside := filepath.Join(base, "outside")
	files(t, outside, "keep", "dir/deeper")
	mounts := map[string]func(t *testing.T, tree string) string{
		"same-fs bind mount": func(t *testing.T, tree string) string {
			mountOrSkip(t, outside, filepath.Join(tree, "m"), "", unix.MS_BIND)
			return "m"
		},
		"tmpfs from outside": func(t *testing.T, tree string) string {
			tmp := filepath.Join(base, "tmpfs-"+filepath.Base(tree))
			if err := os.MkdirAll(tmp, 0o755); err != nil {
				t.Fatal(err)
			}
			mountOrSkip(t, "tmpfs", tmp, "tmpfs", 0)
			files(t, tmp, "keep", "dir/deeper")
			mountOrSkip(t, tmp, filepath.Join(tree, "m"), "", unix.MS_BIND)
			return "m"
		},
		"deeper down": func(t *testing.T, tree string) string {
			if err := os.MkdirAll(filepath.Join(tree, "a", "b", "m"), 0o755); err != nil {
				t.Fatal(err)
			}
			mountOrSkip(t, outside, filepath.Join(tree, "a", "b", "m"), "", unix.MS_BIND)
			return "a/b/m"
		},
		"a file": func(t *testing.T, tree string) string {
			if err := os.WriteFile(filepath.Join(tree, "f"), nil, 0o600); err != nil {
				t.Fatal(err)
			}
			mountOrSkip(t, filepath.Join(outside, "keep"), filepath.Join(tree, "f"), "", unix.MS_BIND)
			return "f"
		},
	}
	ctx := context.Background()
	for name, mount := range mounts {
		t.Run(name, func(t *testing.T) {
			tree := filepath.Join(root, name)
			if err := os.MkdirAll(filepath.Join(tree, "m"), 0o755); err != nil {
				t.Fatal(err)
			}
			files(t, tree, "x/inside", "z")
			rel := mount(t, tree)
			fs := rooted(t, root)
			mp := filepath.Join(tree, rel)
			holds := func(op string) string {
				return `path "` + tree + `" holds a mount point at "` + mp + `" (a bind mount or another file system, whose files are not the allowed root's to remove); ` +
					op + ` does not cross mount points and removed nothing: unmount it first (confinement rule mount-point)`
			}
			wantRefused(t, fs.RmdirContents(ctx, tree), holds("RmdirContents"))
			wantRefused(t, fs.Rmdir(ctx, tree, true), holds("Rmdir"))
			if rel != "f" {
				wantRefused(t, fs.RmdirContents(ctx, mp), `path "`+mp+`" is a mount point (a bind mount or another file system, whose files are not the allowed root's to remove); RmdirContents does not cross mount points and removed nothing: unmount it first (confinement rule mount-point)`)
				wantRefused(t, fs.Rmdir(ctx, mp, true), `path "`+mp+`" is a mount point (a bind mount or another file system, whose files are not the allowed root's to remove); Rmdir does not cross mount points and removed nothing: unmount it first (confinement rule mount-point)`)
			}
			if rel != "f" {
				below := `path "` + mp + `/dir" lies below a mount point at "` + mp + `" (a bind mount or another file system, whose files are not the allowed root's to remove); `
				wantRefused(t, fs.RmdirContents(ctx, mp+"/dir"), below+`RmdirContents does not cross mount points and removed nothing: unmount it first (confinement rule mount-point)`)
				wantRefused(t, fs.Rmdir(ctx, mp+"/dir/deeper", true), `path "`+mp+`/dir/deeper" lies below a mount point at "`+mp+`" (a bind mount or another file system, whose files are not the allowed root's to remove); Rmdir does not cross mount points and removed nothing: unmount it first (confinement rule mount-point)`)
			}
			wantFiles(t, tree, "x/inside", "z")
			wantFiles(t, outside, "keep", "dir/deeper")
			if rel != "f" {
				wantFiles(t, mp, "keep", "dir/deeper")
			}
		})
	}
}

// TestRemovalStopsAtAMountThatAppears mounts a directory from outside the
// root inside the tree after the first look found no mount, before the
// removal: the removal checks each directory on the handle it goes on
// with, meets the mount there, and stops without touching what is mounted.
func TestRemovalStopsAtAMountThatAppears(t *testing.T) {
	base := t.TempDir()
	root := filepath.Join(base, "root")
	outside := filepath.Join(base, "outside")
	tree := filepath.Join(root, "tree")
	files(t, outside, "keep", "dir/deeper")
	files(t, tree, "a/late/.keep", "a/x")
	late := filepath.Join(tree, "a", "late")
	testHookBeforeRemove = func() { mountOrSkip(t, outside, late, "", unix.MS_BIND) }
	t.Cleanup(func() { testHookBeforeRemove = nil })
	err := rooted(t, root).RmdirContents(context.Background(), tree)
	wantRefused(t, err, `path "`+tree+`" holds a mount point at "`+late+`" (a bind mount or another file system, whose files are not the allowed root's to remove); `+
		`RmdirContents does not cross mount points and stopped there, as it appeared while RmdirContents ran: unmount it first (confinement rule mount-point)`)
	wantFiles(t, outside, "keep", "dir/deeper")
}

// TestRemovalWithoutMounts still removes trees, links in them unfollowed.
func TestRemovalWithoutMounts(t *testing.T) {
	base := t.TempDir()
	root := filepath.Join(base, "root")
	outside := filepath.Join(base, "outside")
	tree := filepath.Join(root, "tree")
	files(t, outside, "keep")
	files(t, tree, "a/b/c", "d")
	if err := os.Symlink(outside, filepath.Join(tree, "a", "out")); err != nil {
		t.Fatal(err)
	}
	fs := rooted(t, root)
	if err := fs.RmdirContents(context.Background(), tree); err != nil {
		t.Fatal(err)
	}
	if entries, err := os.ReadDir(tree); err != nil || len(entries) != 0 {
		t.Fatalf("after RmdirContents: %v, %v", entries, err)
	}
	files(t, tree, "a/b/c")
	if err := fs.Rmdir(context.Background(), tree, true); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(tree); !os.IsNotExist(err) {
		t.Fatalf("Rmdir with force left %s: %v", tree, err)
	}
	if err := fs.Rmdir(context.Background(), tree, true); err != nil {
		t.Fatalf("Rmdir with force of a missing path: %v", err)
	}
	wantFiles(t, outside, "keep")
}

func wantRefused(t *testing.T, err error, msg string) {
	t.Helper()
	var r *confine.Refusal
	if !errors.As(err, &r) || r.Rule != confine.RuleMountPoint {
		t.Fatalf("%v, want a mount-point refusal", err)
	}
	if err.Error() != msg {
		t.Fatalf("message\n%s\nwant\n%s", err, msg)
	}
}
