package filesystem

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/pipeguard/pipeguard/agent/confine"
)

// rooted returns Local bound to dir as its only allowed root.
func rooted(t *testing.T, dir string) Local {
	t.Helper()
	flavour := confine.Linux
	if runtime.GOOS == "windows" {
		flavour = confine.Windows
	}
	c, err := confine.New(confine.Options{Flavour: flavour, Roots: []string{dir}})
	if err != nil {
		t.Fatal(err)
	}
	return Local{}.WithRoots(c).(Local)
}

// needSymlinks skips a test when this system does not create symbolic
// links: Wine 8's CreateSymbolicLinkW reports success and creates nothing.
func needSymlinks(t *testing.T) {
	t.Helper()
	dir, err := os.MkdirTemp("", "symlink-probe")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = os.RemoveAll(dir) }() // best effort: Wine 8 cannot RemoveAll
	link := filepath.Join(dir, "probe")
	if err := os.Symlink(dir, link); err != nil {
		t.Skipf("this system does not create symbolic links: %v", err)
	}
	if fi, err := os.Lstat(link); err != nil || fi.Mode()&os.ModeSymlink == 0 {
		t.Skipf("this system reports creating a symbolic link but none exists (Lstat: %v)", err)
	}
}

func TestLocal(t *testing.T) {
	needSymlinks(t)
	ctx := context.Background()
	dir := t.TempDir()
	fs := rooted(t, dir)
	a := filepath.Join(dir, "a", "b")
	if err := fs.Mkdir(ctx, a); err != nil {
		t.Fatal(err)
	}
	if ok, err := fs.PathExists(ctx, a); !ok || err != nil {
		t.Fatalf("PathExists after Mkdir = %v, %v", ok, err)
	}
	link := filepath.Join(dir, "link")
	if err := fs.CreateSymlink(ctx, a, link); err != nil {
		t.Fatal(err)
	}
	if ok, err := fs.IsSymlink(ctx, link); !ok || err != nil {
		t.Fatalf("IsSymlink(link) = %v, %v", ok, err)
	}
	if ok, err := fs.IsSymlink(ctx, a); ok || err != nil {
		t.Fatalf("IsSymlink(dir) = %v, %v", ok, err)
	}
	if _, err := fs.IsSymlink(ctx, filepath.Join(dir, "missing")); err == nil {
		t.Fatal("IsSymlink(missing) succeeded")
	}
	if err := os.WriteFile(filepath.Join(a, "f"), []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := fs.Rmdir(ctx, filepath.Join(dir, "a"), false); err == nil {
		t.Fatal("Rmdir without force removed a non-empty dir")
	}
	if err := fs.RmdirContents(ctx, link); err != nil {
		t.Fatal(err)
	}
	if entries, _ := os.ReadDir(a); len(entries) != 0 {
		t.Fatalf("RmdirContents left %v", entries)
	}
	if err := fs.Rmdir(ctx, link, false); err != nil {
		t.Fatal(err)
	}
	if ok, _ := fs.PathExists(ctx, a); !ok {
		t.Fatal("removing the link removed its target")
	}
	if err := fs.Rmdir(ctx, filepath.Join(dir, "a"), true); err != nil {
		t.Fatal(err)
	}
	if ok, _ := fs.PathExists(ctx, a); ok {
		t.Fatal("Rmdir with force left the tree")
	}
}

// TestLocalRefusesTheRoot refuses creating and destroying operations on the
// root, also when reached through a link, and leaves the root intact.
func TestLocalRefusesTheRoot(t *testing.T) {
	needSymlinks(t)
	ctx := context.Background()
	dir := t.TempDir()
	fs := rooted(t, dir)
	if err := os.WriteFile(filepath.Join(dir, "keep"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(dir, filepath.Join(dir, "self")); err != nil {
		t.Fatal(err)
	}
	for name, err := range map[string]error{
		"Mkdir":                      fs.Mkdir(ctx, dir),
		"Rmdir":                      fs.Rmdir(ctx, dir, true),
		"RmdirContents":              fs.RmdirContents(ctx, dir),
		"RmdirContents through link": fs.RmdirContents(ctx, filepath.Join(dir, "self")),
		"CreateSymlink to the root":  fs.CreateSymlink(ctx, dir, filepath.Join(dir, "l")),
	} {
		var r *confine.Refusal
		if !errors.As(err, &r) || r.Rule != confine.RuleRootTarget {
			t.Errorf("%s: %v, want a root-target refusal", name, err)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "keep")); err != nil {
		t.Fatalf("the root lost its contents: %v", err)
	}
}

func TestLocalWithoutRoots(t *testing.T) {
	if err := (Local{}).Mkdir(context.Background(), t.TempDir()+"/x"); err == nil {
		t.Fatal("Local without roots ran Mkdir")
	}
}
