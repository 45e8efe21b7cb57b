package filesystem

import (
	"context"
	"os"
	"path/filepath"
	"testing"
)

func TestLocal(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	fs := Local{}
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
	if err := fs.RmdirContents(ctx, a); err != nil {
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
