package app

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	fsv1 "github.com/kubernetes-csi/csi-proxy/client/api/filesystem/v1"
	fsv1beta1 "github.com/kubernetes-csi/csi-proxy/client/api/filesystem/v1beta1"
	fsv2alpha1 "github.com/kubernetes-csi/csi-proxy/client/api/filesystem/v2alpha1"
	"google.golang.org/grpc/codes"
)

// TestFilesystemV1 walks every filesystem v1 method through a real socket
// against a temp kubelet dir, the way a CSI node plugin stages and publishes
// a volume.
func TestFilesystemV1(t *testing.T) {
	r := start(t, Options{})
	c := fsv1.NewFilesystemClient(r.dial(t, "filesystem", "v1"))
	ctx := context.Background()
	staging := filepath.Join(r.kubelet, "plugins", "kubernetes.io", "csi", "drv", "pv1", "globalmount")
	publish := filepath.Join(r.kubelet, "pods", "uid", "volumes", "kubernetes.io~csi", "pv1", "mount")

	if resp, err := c.PathExists(ctx, &fsv1.PathExistsRequest{Path: staging}); err != nil || resp.Exists {
		t.Fatalf("PathExists before Mkdir = %v, %v; want false", resp, err)
	}
	if _, err := c.Mkdir(ctx, &fsv1.MkdirRequest{Path: staging}); err != nil {
		t.Fatalf("Mkdir: %v", err)
	}
	if fi, err := os.Stat(staging); err != nil || !fi.IsDir() {
		t.Fatalf("Mkdir did not create %s: %v", staging, err)
	}
	if resp, err := c.PathExists(ctx, &fsv1.PathExistsRequest{Path: staging}); err != nil || !resp.Exists {
		t.Fatalf("PathExists after Mkdir = %v, %v; want true", resp, err)
	}
	if _, err := c.Mkdir(ctx, &fsv1.MkdirRequest{Path: filepath.Dir(publish)}); err != nil {
		t.Fatalf("Mkdir parent of publish path: %v", err)
	}
	if _, err := c.CreateSymlink(ctx, &fsv1.CreateSymlinkRequest{SourcePath: staging, TargetPath: publish}); err != nil {
		t.Fatalf("CreateSymlink: %v", err)
	}
	if got, err := os.Readlink(publish); err != nil || got != staging {
		t.Fatalf("link %s -> %q, %v; want %s", publish, got, err, staging)
	}
	if resp, err := c.IsSymlink(ctx, &fsv1.IsSymlinkRequest{Path: publish}); err != nil || !resp.IsSymlink {
		t.Fatalf("IsSymlink(link) = %v, %v; want true", resp, err)
	}
	if resp, err := c.IsSymlink(ctx, &fsv1.IsSymlinkRequest{Path: staging}); err != nil || resp.IsSymlink {
		t.Fatalf("IsSymlink(dir) = %v, %v; want false", resp, err)
	}
	_, err := c.IsSymlink(ctx, &fsv1.IsSymlinkRequest{Path: filepath.Join(r.kubelet, "missing")})
	wantStatus(t, err, codes.Unknown, "no such file or directory")

	if _, err := c.Rmdir(ctx, &fsv1.RmdirRequest{Path: publish}); err != nil {
		t.Fatalf("Rmdir(link): %v", err)
	}
	if _, err := os.Stat(staging); err != nil {
		t.Fatalf("Rmdir of the link removed its target: %v", err)
	}
	if err := os.WriteFile(filepath.Join(staging, "data"), []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err = c.Rmdir(ctx, &fsv1.RmdirRequest{Path: staging})
	wantStatus(t, err, codes.Unknown, "directory not empty")
	if _, err := c.Rmdir(ctx, &fsv1.RmdirRequest{Path: staging, Force: true}); err != nil {
		t.Fatalf("Rmdir force: %v", err)
	}
	if _, err := os.Stat(staging); !os.IsNotExist(err) {
		t.Fatalf("Rmdir force left %s: %v", staging, err)
	}
}

// TestFilesystemV1beta1 covers the older version real drivers fall back to.
func TestFilesystemV1beta1(t *testing.T) {
	r := start(t, Options{})
	c := fsv1beta1.NewFilesystemClient(r.dial(t, "filesystem", "v1beta1"))
	ctx := context.Background()
	dir := filepath.Join(r.kubelet, "plugins", "a")
	link := filepath.Join(r.kubelet, "pods", "link")

	if _, err := c.Mkdir(ctx, &fsv1beta1.MkdirRequest{Path: dir, Context: fsv1beta1.PathContext_PLUGIN}); err != nil {
		t.Fatalf("Mkdir: %v", err)
	}
	if resp, err := c.PathExists(ctx, &fsv1beta1.PathExistsRequest{Path: dir, Context: fsv1beta1.PathContext_POD}); err != nil || !resp.Exists {
		t.Fatalf("PathExists = %v, %v", resp, err)
	}
	if _, err := c.Mkdir(ctx, &fsv1beta1.MkdirRequest{Path: filepath.Dir(link)}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.LinkPath(ctx, &fsv1beta1.LinkPathRequest{SourcePath: dir, TargetPath: link}); err != nil {
		t.Fatalf("LinkPath: %v", err)
	}
	if resp, err := c.IsMountPoint(ctx, &fsv1beta1.IsMountPointRequest{Path: link}); err != nil || !resp.IsMountPoint {
		t.Fatalf("IsMountPoint = %v, %v", resp, err)
	}
	if _, err := c.Rmdir(ctx, &fsv1beta1.RmdirRequest{Path: link}); err != nil {
		t.Fatalf("Rmdir(link): %v", err)
	}
	if _, err := c.Rmdir(ctx, &fsv1beta1.RmdirRequest{Path: dir, Force: true}); err != nil {
		t.Fatalf("Rmdir: %v", err)
	}
	if resp, err := c.PathExists(ctx, &fsv1beta1.PathExistsRequest{Path: dir}); err != nil || resp.Exists {
		t.Fatalf("PathExists after Rmdir = %v, %v", resp, err)
	}
}

func TestFilesystemV2alpha1RmdirContents(t *testing.T) {
	r := start(t, Options{})
	c := fsv2alpha1.NewFilesystemClient(r.dial(t, "filesystem", "v2alpha1"))
	dir := filepath.Join(r.kubelet, "x")
	if err := os.MkdirAll(filepath.Join(dir, "a", "b"), 0o755); err != nil {
		t.Fatal(err)
	}
	if _, err := c.RmdirContents(context.Background(), &fsv2alpha1.RmdirContentsRequest{Path: dir}); err != nil {
		t.Fatalf("RmdirContents: %v", err)
	}
	if entries, err := os.ReadDir(dir); err != nil || len(entries) != 0 {
		t.Fatalf("after RmdirContents: %v, %v; want an empty dir", entries, err)
	}
}
