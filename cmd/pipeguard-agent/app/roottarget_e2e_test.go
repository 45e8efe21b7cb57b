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
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
)

// TestRootsAreNeverTargets refuses every creating or destroying method on
// the kubelet dir and on a working dir themselves, named directly or
// reached through a link, with rule root-target, and leaves both intact.
// Reads may name a root. Each refusal is one deny record of the audit log,
// with rule root-target, and the log verifies.
func TestRootsAreNeverTargets(t *testing.T) {
	wd := filepath.Join(t.TempDir(), "wd")
	if err := os.MkdirAll(wd, 0o755); err != nil {
		t.Fatal(err)
	}
	r, src := startAudited(t, Options{WorkingDirs: []string{wd}})
	v1 := fsv1.NewFilesystemClient(r.dial(t, "filesystem", "v1"))
	v1beta1 := fsv1beta1.NewFilesystemClient(r.dial(t, "filesystem", "v1beta1"))
	v2 := fsv2alpha1.NewFilesystemClient(r.dial(t, "filesystem", "v2alpha1"))
	ctx := context.Background()
	const rootTarget = "confinement/root-target"
	var refusals refusals
	var sent int

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
				call func(...grpc.CallOption) error
				msg  string
			}{
				"Mkdir": {func(o ...grpc.CallOption) error {
					_, err := v1.Mkdir(ctx, &fsv1.MkdirRequest{Path: root}, o...)
					return err
				}, "path: " + refused("Mkdir")},
				"Mkdir, trailing separator": {func(o ...grpc.CallOption) error {
					_, err := v1.Mkdir(ctx, &fsv1.MkdirRequest{Path: root + "/"}, o...)
					return err
				}, "is an allowed root itself; Mkdir"},
				"Rmdir": {func(o ...grpc.CallOption) error {
					_, err := v1.Rmdir(ctx, &fsv1.RmdirRequest{Path: root}, o...)
					return err
				}, "path: " + refused("Rmdir")},
				"Rmdir force": {func(o ...grpc.CallOption) error {
					_, err := v1.Rmdir(ctx, &fsv1.RmdirRequest{Path: root, Force: true}, o...)
					return err
				}, refused("Rmdir")},
				"Rmdir force, v1beta1": {func(o ...grpc.CallOption) error {
					_, err := v1beta1.Rmdir(ctx, &fsv1beta1.RmdirRequest{Path: root, Force: true}, o...)
					return err
				}, refused("Rmdir")},
				"RmdirContents": {func(o ...grpc.CallOption) error {
					_, err := v2.RmdirContents(ctx, &fsv2alpha1.RmdirContentsRequest{Path: root}, o...)
					return err
				}, "path: " + refused("RmdirContents")},
				"CreateSymlink to the root": {func(o ...grpc.CallOption) error {
					_, err := v1.CreateSymlink(ctx, &fsv1.CreateSymlinkRequest{SourcePath: root, TargetPath: keep + "/l"}, o...)
					return err
				}, "source_path: " + refused("CreateSymlink")},
				"CreateSymlink at the root": {func(o ...grpc.CallOption) error {
					_, err := v1.CreateSymlink(ctx, &fsv1.CreateSymlinkRequest{SourcePath: keep, TargetPath: root}, o...)
					return err
				}, "target_path: " + refused("CreateSymlink")},
				"LinkPath to the root": {func(o ...grpc.CallOption) error {
					_, err := v1beta1.LinkPath(ctx, &fsv1beta1.LinkPathRequest{SourcePath: root, TargetPath: keep + "/l"}, o...)
					return err
				}, "source_path: " + refused("CreateSymlink")},
				"Mkdir through a link": {func(o ...grpc.CallOption) error {
					_, err := v1.Mkdir(ctx, &fsv1.MkdirRequest{Path: self}, o...)
					return err
				}, "path: path \"" + self + "\" " + through("Mkdir")},
				"RmdirContents through a link": {func(o ...grpc.CallOption) error {
					_, err := v2.RmdirContents(ctx, &fsv2alpha1.RmdirContentsRequest{Path: self}, o...)
					return err
				}, through("RmdirContents")},
				"CreateSymlink to the root through a link": {func(o ...grpc.CallOption) error {
					_, err := v1.CreateSymlink(ctx, &fsv1.CreateSymlinkRequest{SourcePath: self, TargetPath: keep + "/l"}, o...)
					return err
				}, "source_path: path \"" + self + "\" " + through("CreateSymlink")},
			}
			sent += len(cases)
			for name, tc := range cases {
				t.Run(name, func(t *testing.T) {
					wantStatus(t, refusals.call(rootTarget, tc.call), codes.PermissionDenied, tc.msg)
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
	// Every refusal is one deny record with rule root-target; the reads and
	// the removal of the link are allowed.
	if refusals.count() != sent {
		t.Errorf("%d calls refused, want %d", refusals.count(), sent)
	}
	denies := src.wantDenials(t, &refusals)
	t.Logf("%d calls refused, %d deny records", refusals.count(), len(denies))
}
