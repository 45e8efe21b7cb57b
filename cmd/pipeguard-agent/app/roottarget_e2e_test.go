//go:build linux

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

// TestRootsAreNeverTargets refuses every creating or destroying method on
// the kubelet dir and on a working dir themselves, named directly or
// reached through a link, with rule root-target, and leaves both intact.
// Reads may name a root.
func TestRootsAreNeverTargets(t *testing.T) {
	wd := filepath.Join(t.TempDir(), "wd")
	if err := os.MkdirAll(wd, 0o755); err != nil {
		t.Fatal(err)
	}
	r := start(t, Options{WorkingDirs: []string{wd}})
	v1 := fsv1.NewFilesystemClient(r.dial(t, "filesystem", "v1"))
	v1beta1 := fsv1beta1.NewFilesystemClient(r.dial(t, "filesystem", "v1beta1"))
	v2 := fsv2alpha1.NewFilesystemClient(r.dial(t, "filesystem", "v2alpha1"))
	ctx := context.Background()

	for name, root := range map[string]string{"kubelet dir": r.kubelet, "working dir": wd} {
		t.Run(name, func(t *testing.T) {
			if err := os.MkdirAll(filepath.Join(root, "keep", "deeper"), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink(root, filepath.Join(root, "self")); err != nil {
				t.Fatal(err)
			}
			self := filepath.Join(root, "self")
			keep := filepath.Join(root, "keep")
			before := snapshot(t, root)
			refused := func(op string) string {
				return `path "` + root + `" is an allowed root itself; ` + op + ` may act only on paths inside it (confinement rule root-target)`
			}
			through := func(op string) string {
				return `resolves to the allowed root "` + root + `"; ` + op + ` may act only on paths inside it (confinement rule root-target)`
			}
			cases := map[string]struct {
				call func() error
				msg  string
			}{
				"Mkdir": {func() error { _, err := v1.Mkdir(ctx, &fsv1.MkdirRequest{Path: root}); return err }, "path: " + refused("Mkdir")},
				"Mkdir, trailing separator": {func() error {
					_, err := v1.Mkdir(ctx, &fsv1.MkdirRequest{Path: root + "/"})
					return err
				}, "is an allowed root itself; Mkdir"},
				"Rmdir": {func() error { _, err := v1.Rmdir(ctx, &fsv1.RmdirRequest{Path: root}); return err }, "path: " + refused("Rmdir")},
				"Rmdir force": {func() error {
					_, err := v1.Rmdir(ctx, &fsv1.RmdirRequest{Path: root, Force: true})
					return err
				}, refused("Rmdir")},
				"Rmdir force, v1beta1": {func() error {
					_, err := v1beta1.Rmdir(ctx, &fsv1beta1.RmdirRequest{Path: root, Force: true})
					return err
				}, refused("Rmdir")},
				"RmdirContents": {func() error {
					_, err := v2.RmdirContents(ctx, &fsv2alpha1.RmdirContentsRequest{Path: root})
					return err
				}, "path: " + refused("RmdirContents")},
				"CreateSymlink to the root": {func() error {
					_, err := v1.CreateSymlink(ctx, &fsv1.CreateSymlinkRequest{SourcePath: root, TargetPath: keep + "/l"})
					return err
				}, "source_path: " + refused("CreateSymlink")},
				"CreateSymlink at the root": {func() error {
					_, err := v1.CreateSymlink(ctx, &fsv1.CreateSymlinkRequest{SourcePath: keep, TargetPath: root})
					return err
				}, "target_path: " + refused("CreateSymlink")},
				"LinkPath to the root": {func() error {
					_, err := v1beta1.LinkPath(ctx, &fsv1beta1.LinkPathRequest{SourcePath: root, TargetPath: keep + "/l"})
					return err
				}, "source_path: " + refused("CreateSymlink")},
				"Mkdir through a link": {func() error { _, err := v1.Mkdir(ctx, &fsv1.MkdirRequest{Path: self}); return err }, "path: path \"" + self + "\" " + through("Mkdir")},
				"RmdirContents through a link": {func() error {
					_, err := v2.RmdirContents(ctx, &fsv2alpha1.RmdirContentsRequest{Path: self})
					return err
				}, through("RmdirContents")},
				"CreateSymlink to the root through a link": {func() error {
					_, err := v1.CreateSymlink(ctx, &fsv1.CreateSymlinkRequest{SourcePath: self, TargetPath: keep + "/l"})
					return err
				}, "source_path: path \"" + self + "\" " + through("CreateSymlink")},
			}
			for name, tc := range cases {
				t.Run(name, func(t *testing.T) {
					wantStatus(t, tc.call(), codes.PermissionDenied, tc.msg)
				})
			}
			if n := wantUnchanged(t, root, before); n != 0 {
				t.Fatalf("refused calls changed %d entries of the root", n)
			}
			// Reads name the root.
			if resp, err := v1.PathExists(ctx, &fsv1.PathExistsRequest{Path: root}); err != nil || !resp.Exists {
				t.Fatalf("PathExists(root) = %v, %v", resp, err)
			}
			if resp, err := v1.IsSymlink(ctx, &fsv1.IsSymlinkRequest{Path: root}); err != nil || resp.IsSymlink {
				t.Fatalf("IsSymlink(root) = %v, %v; want false", resp, err)
			}
			if resp, err := v1beta1.IsMountPoint(ctx, &fsv1beta1.IsMountPointRequest{Path: self}); err != nil || !resp.IsMountPoint {
				t.Fatalf("IsMountPoint(link to the root) = %v, %v; want true", resp, err)
			}
			// The link to the root is inside it, and removing it leaves the root.
			if _, err := v1.Rmdir(ctx, &fsv1.RmdirRequest{Path: self, Force: true}); err != nil {
				t.Fatalf("Rmdir of the link to the root: %v", err)
			}
			if _, err := os.Stat(filepath.Join(keep, "deeper")); err != nil {
				t.Fatalf("removing the link to the root removed the root's contents: %v", err)
			}
		})
	}
}
