//go:build linux

package app

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	fsv1 "github.com/kubernetes-csi/csi-proxy/client/api/filesystem/v1"
	fsv2alpha1 "github.com/kubernetes-csi/csi-proxy/client/api/filesystem/v2alpha1"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
)

// plantLinks creates, in dir, links that lead out of the kubelet dir k in
// every shape a tenant can plant, and returns their paths by shape.
func plantLinks(t testing.TB, k, dir, outside string) map[string]string {
	t.Helper()
	rel, err := filepath.Rel(dir, outside)
	if err != nil {
		t.Fatal(err)
	}
	links := map[string]string{
		"absolute":  outside,
		"relative":  rel,
		"chained":   "relative",
		"dangling":  filepath.Join(outside, "missing"),
		"slash":     "/",
		"into-link": filepath.Join(k, "pods", "p", "absolute"),
	}
	out := map[string]string{}
	for name, target := range links {
		p := filepath.Join(dir, name)
		if err := os.Symlink(target, p); err != nil {
			t.Fatal(err)
		}
		out[name] = p
	}
	return out
}

// TestPlantedLinksOutAreRefused plants absolute, relative, chained,
// dangling and "/" links leading out of the kubelet dir, and calls every
// path-taking filesystem method through each, on the link and below it:
// every call is refused with symlink-escape, and nothing outside changes.
// Each refusal is one deny record of the audit log, with rule
// symlink-escape, and the log verifies.
func TestPlantedLinksOutAreRefused(t *testing.T) {
	r, src := startAudited(t, Options{})
	k := r.kubelet
	outside := outsideTree(t, k)
	dir := filepath.Join(k, "pods", "p")
	data := filepath.Join(dir, "data")
	if err := os.MkdirAll(data, 0o755); err != nil {
		t.Fatal(err)
	}
	links := plantLinks(t, k, dir, outside)
	before := snapshot(t, outside)
	v1 := fsv1.NewFilesystemClient(r.dial(t, "filesystem", "v1"))
	v2 := fsv2alpha1.NewFilesystemClient(r.dial(t, "filesystem", "v2alpha1"))
	ctx := context.Background()

	// Each method, with the path below or on the link it is called with.
	calls := map[string]func(link string, o ...grpc.CallOption) error{
		"PathExists below": func(l string, o ...grpc.CallOption) error {
			_, err := v1.PathExists(ctx, &fsv1.PathExistsRequest{Path: l + "/keep"}, o...)
			return err
		},
		"Mkdir below": func(l string, o ...grpc.CallOption) error {
			_, err := v1.Mkdir(ctx, &fsv1.MkdirRequest{Path: l + "/new"}, o...)
			return err
		},
		"Mkdir on": func(l string, o ...grpc.CallOption) error {
			_, err := v1.Mkdir(ctx, &fsv1.MkdirRequest{Path: l}, o...)
			return err
		},
		"Rmdir below": func(l string, o ...grpc.CallOption) error {
			_, err := v1.Rmdir(ctx, &fsv1.RmdirRequest{Path: l + "/keep", Force: true}, o...)
			return err
		},
		"Rmdir below, no force": func(l string, o ...grpc.CallOption) error {
			_, err := v1.Rmdir(ctx, &fsv1.RmdirRequest{Path: l + "/sub"}, o...)
			return err
		},
		"RmdirContents on": func(l string, o ...grpc.CallOption) error {
			_, err := v2.RmdirContents(ctx, &fsv2alpha1.RmdirContentsRequest{Path: l}, o...)
			return err
		},
		"RmdirContents below": func(l string, o ...grpc.CallOption) error {
			_, err := v2.RmdirContents(ctx, &fsv2alpha1.RmdirContentsRequest{Path: l + "/keep"}, o...)
			return err
		},
		"CreateSymlink source on": func(l string, o ...grpc.CallOption) error {
			_, err := v1.CreateSymlink(ctx, &fsv1.CreateSymlinkRequest{SourcePath: l, TargetPath: data + "/l"}, o...)
			return err
		},
		"CreateSymlink source below": func(l string, o ...grpc.CallOption) error {
			_, err := v1.CreateSymlink(ctx, &fsv1.CreateSymlinkRequest{SourcePath: l + "/keep", TargetPath: data + "/l"}, o...)
			return err
		},
		"CreateSymlink target below": func(l string, o ...grpc.CallOption) error {
			_, err := v1.CreateSymlink(ctx, &fsv1.CreateSymlinkRequest{SourcePath: data, TargetPath: l + "/l"}, o...)
			return err
		},
		"IsSymlink on": func(l string, o ...grpc.CallOption) error {
			_, err := v1.IsSymlink(ctx, &fsv1.IsSymlinkRequest{Path: l}, o...)
			return err
		},
		"IsSymlink below": func(l string, o ...grpc.CallOption) error {
			_, err := v1.IsSymlink(ctx, &fsv1.IsSymlinkRequest{Path: l + "/keep"}, o...)
			return err
		},
	}
	const escape = "confinement/symlink-escape"
	var refusals refusals
	for shape, link := range links {
		for method, call := range calls {
			t.Run(shape+"/"+method, func(t *testing.T) {
				err := refusals.call(escape, func(o ...grpc.CallOption) error { return call(link, o...) })
				wantStatus(t, err, codes.PermissionDenied, "(confinement rule symlink-escape)")
			})
		}
	}
	if n := wantUnchanged(t, outside, before); n != 0 {
		t.Fatalf("%d entries outside changed", n)
	}
	// The links themselves are inside: they can be inspected and removed.
	for shape, link := range links {
		if resp, err := v1.PathExists(ctx, &fsv1.PathExistsRequest{Path: link}); err != nil || !resp.Exists {
			t.Errorf("%s: PathExists of the link = %v, %v", shape, resp, err)
		}
		if _, err := v1.Rmdir(ctx, &fsv1.RmdirRequest{Path: link, Force: true}); err != nil {
			t.Errorf("%s: Rmdir of the link: %v", shape, err)
		}
	}
	if n := wantUnchanged(t, outside, before); n != 0 {
		t.Fatalf("removing the links changed %d entries outside", n)
	}
	// Every refusal is one deny record with rule symlink-escape; the calls
	// on the links themselves are allowed.
	if want := len(links) * len(calls); refusals.count() != want {
		t.Errorf("%d calls refused, want %d", refusals.count(), want)
	}
	denies := src.wantDenials(t, &refusals)
	t.Logf("%d calls refused, %d deny records", refusals.count(), len(denies))
}

// TestLinksInsideKeepWorking follows links, absolute, relative, chained and
// dangling, that stay inside the kubelet dir, for every method. No call is
// refused: the audit log holds no deny record, and it verifies.
func TestLinksInsideKeepWorking(t *testing.T) {
	r, src := startAudited(t, Options{})
	k := r.kubelet
	dir := filepath.Join(k, "pods", "p")
	data := filepath.Join(dir, "data")
	if err := os.MkdirAll(data, 0o755); err != nil {
		t.Fatal(err)
	}
	for name, target := range map[string]string{
		"absolute": data,
		"relative": "data",
		"chained":  "absolute",
		"dangling": filepath.Join(dir, "later"),
	} {
		if err := os.Symlink(target, filepath.Join(dir, name)); err != nil {
			t.Fatal(err)
		}
	}
	v1 := fsv1.NewFilesystemClient(r.dial(t, "filesystem", "v1"))
	v2 := fsv2alpha1.NewFilesystemClient(r.dial(t, "filesystem", "v2alpha1"))
	ctx := context.Background()

	for _, shape := range []string{"absolute", "relative", "chained"} {
		t.Run(shape, func(t *testing.T) {
			l := filepath.Join(dir, shape)
			if _, err := v1.Mkdir(ctx, &fsv1.MkdirRequest{Path: l + "/new/deep"}); err != nil {
				t.Fatalf("Mkdir through the link: %v", err)
			}
			if _, err := os.Stat(filepath.Join(data, "new", "deep")); err != nil {
				t.Fatalf("Mkdir did not land in the link's target: %v", err)
			}
			if resp, err := v1.PathExists(ctx, &fsv1.PathExistsRequest{Path: l + "/new"}); err != nil || !resp.Exists {
				t.Fatalf("PathExists through the link = %v, %v", resp, err)
			}
			if resp, err := v1.IsSymlink(ctx, &fsv1.IsSymlinkRequest{Path: l}); err != nil || !resp.IsSymlink {
				t.Fatalf("IsSymlink(link) = %v, %v; want true", resp, err)
			}
			pub := filepath.Join(dir, "pub-"+shape)
			if _, err := v1.CreateSymlink(ctx, &fsv1.CreateSymlinkRequest{SourcePath: l + "/new", TargetPath: pub}); err != nil {
				t.Fatalf("CreateSymlink from the link: %v", err)
			}
			if fi, err := os.Stat(filepath.Join(pub, "deep")); err != nil || !fi.IsDir() {
				t.Fatalf("the new link does not lead to the source: %v", err)
			}
			if _, err := v1.Rmdir(ctx, &fsv1.RmdirRequest{Path: l + "/new/deep"}); err != nil {
				t.Fatalf("Rmdir through the link: %v", err)
			}
			if _, err := v2.RmdirContents(ctx, &fsv2alpha1.RmdirContentsRequest{Path: l}); err != nil {
				t.Fatalf("RmdirContents of the link: %v", err)
			}
			if entries, _ := os.ReadDir(data); len(entries) != 0 {
				t.Fatalf("RmdirContents left %v", entries)
			}
			if _, err := os.Lstat(l); err != nil {
				t.Fatalf("RmdirContents removed the link: %v", err)
			}
		})
	}
	dangling := filepath.Join(dir, "dangling")
	if resp, err := v1.IsSymlink(ctx, &fsv1.IsSymlinkRequest{Path: dangling}); err != nil || resp.IsSymlink {
		t.Fatalf("IsSymlink(dangling link inside) = %v, %v; want false", resp, err)
	}
	if _, err := v1.Mkdir(ctx, &fsv1.MkdirRequest{Path: dangling + "/x"}); err != nil {
		t.Fatalf("Mkdir through a dangling link inside: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "later", "x")); err != nil {
		t.Fatalf("Mkdir through the dangling link did not create its target: %v", err)
	}
	if resp, err := v1.IsSymlink(ctx, &fsv1.IsSymlinkRequest{Path: dangling}); err != nil || !resp.IsSymlink {
		t.Fatalf("IsSymlink(link whose target now exists) = %v, %v; want true", resp, err)
	}
	// Every call above succeeded: none was refused.
	src.wantDenials(t, &refusals{})
}
