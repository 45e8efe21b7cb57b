//go:build linux

package app

import (
	"context"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	fsv1 "github.com/kubernetes-csi/csi-proxy/client/api/filesystem/v1"
	fsv2alpha1 "github.com/kubernetes-csi/csi-proxy/client/api/filesystem/v2alpha1"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/pipeguard/pipeguard/agent/audit"
)

// snapshot describes every entry below dir, dir itself included, by type,
// permissions, size, modification time and link target.
func snapshot(t testing.TB, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		fi, err := os.Lstat(p)
		if err != nil {
			return err
		}
		target, _ := os.Readlink(p)
		rel, _ := filepath.Rel(dir, p)
		out[rel] = fmt.Sprintf("%v %d %s -> %q", fi.Mode(), fi.Size(), fi.ModTime().Format(time.RFC3339Nano), target)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// wantUnchanged fails if an entry below dir was created, changed or removed
// since before was taken, and returns how many were.
func wantUnchanged(t testing.TB, dir string, before map[string]string) int {
	t.Helper()
	after := snapshot(t, dir)
	n := 0
	for _, k := range slices.Sorted(maps.Keys(after)) {
		if before[k] != after[k] {
			n++
			t.Errorf("%s: %s, was %q", filepath.Join(dir, k), after[k], before[k])
		}
	}
	for _, k := range slices.Sorted(maps.Keys(before)) {
		if _, ok := after[k]; !ok {
			n++
			t.Errorf("%s was removed", filepath.Join(dir, k))
		}
	}
	return n
}

// outsideTree creates a directory next to the kubelet dir, outside every
// allowed root, with a few entries to be emptied, removed or written to.
func outsideTree(t testing.TB, kubelet string) string {
	t.Helper()
	outside := filepath.Join(filepath.Dir(kubelet), "outside")
	for _, d := range []string{"keep/deeper", "secret", "sub"} {
		if err := os.MkdirAll(filepath.Join(outside, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(outside, "keep", "file"), []byte("data"), 0o600); err != nil {
		t.Fatal(err)
	}
	// Entry times a second in the past, so that any later change shows.
	past := time.Now().Add(-time.Second)
	_ = filepath.WalkDir(outside, func(p string, _ fs.DirEntry, _ error) error { return os.Chtimes(p, past, past) })
	return outside
}

// TestFlippedDirectoryNeverLeadsOut races filesystem calls from two clients
// against a tenant that keeps swapping a directory in its emptyDir volume
// for a symlink to a directory outside the roots, for 5 seconds. Every call
// that lands must land inside the kubelet dir: nothing outside may be
// created, changed or removed. Every refused call is one deny record of
// the audit log, with rule symlink-escape, and the log verifies.
func TestFlippedDirectoryNeverLeadsOut(t *testing.T) {
	r, src := startAudited(t, Options{})
	k := r.kubelet
	outside := outsideTree(t, k)
	vol := filepath.Join(k, "pods", "uid", "volumes", "kubernetes.io~empty-dir", "scratch")
	inside := filepath.Join(k, "pods", "uid", "data")
	for _, d := range []string{vol, inside} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	race := filepath.Join(vol, "race")
	const escape = "confinement/symlink-escape" // the rule that refuses a call led out
	before := snapshot(t, outside)

	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	var wg sync.WaitGroup
	var flips atomic.Int64
	wg.Go(func() {
		for ctx.Err() == nil {
			_ = os.RemoveAll(race)
			_ = os.Mkdir(race, 0o755)
			_ = os.MkdirAll(filepath.Join(race, "keep", "deeper"), 0o755)
			_ = os.RemoveAll(race)
			_ = os.Symlink(outside, race)
			flips.Add(1)
		}
	})

	var made, refused, invalid, landed, failed atomic.Int64
	var refusals refusals
	call := func(err error) {
		made.Add(1)
		switch status.Code(err) {
		case codes.OK:
			landed.Add(1)
		case codes.PermissionDenied:
			refused.Add(1)
		case codes.InvalidArgument:
			invalid.Add(1)
		default:
			failed.Add(1)
		}
	}
	for c := range 2 {
		v1 := fsv1.NewFilesystemClient(r.dial(t, "filesystem", "v1"))
		v2 := fsv2alpha1.NewFilesystemClient(r.dial(t, "filesystem", "v2alpha1"))
		for w := range 2 {
			wg.Go(func() {
				for i := 0; ctx.Err() == nil; i++ {
					n := fmt.Sprintf("%d-%d-%d", c, w, i)
					bg := context.Background()
					send := func(f func(...grpc.CallOption) error) { call(refusals.call(escape, f)) }
					send(func(o ...grpc.CallOption) error {
						_, err := v1.Mkdir(bg, &fsv1.MkdirRequest{Path: race + "/r" + n + "/x"}, o...)
						return err
					})
					send(func(o ...grpc.CallOption) error {
						_, err := v1.Rmdir(bg, &fsv1.RmdirRequest{Path: race + "/keep", Force: true}, o...)
						return err
					})
					send(func(o ...grpc.CallOption) error {
						_, err := v1.Rmdir(bg, &fsv1.RmdirRequest{Path: race + "/secret"}, o...)
						return err
					})
					send(func(o ...grpc.CallOption) error {
						_, err := v2.RmdirContents(bg, &fsv2alpha1.RmdirContentsRequest{Path: race}, o...)
						return err
					})
					send(func(o ...grpc.CallOption) error {
						_, err := v2.RmdirContents(bg, &fsv2alpha1.RmdirContentsRequest{Path: race + "/keep"}, o...)
						return err
					})
					send(func(o ...grpc.CallOption) error {
						_, err := v1.CreateSymlink(bg, &fsv1.CreateSymlinkRequest{SourcePath: inside, TargetPath: race + "/l" + n}, o...)
						return err
					})
					send(func(o ...grpc.CallOption) error {
						_, err := v1.CreateSymlink(bg, &fsv1.CreateSymlinkRequest{SourcePath: race + "/keep", TargetPath: inside + "/l" + n}, o...)
						return err
					})
				}
			})
		}
	}
	wg.Wait()

	escaped := wantUnchanged(t, outside, before)
	t.Logf("%d calls in 5s from 2 clients (%d flips): %d landed inside, %d refused, %d invalid, %d failed on the host; %d entries outside created, changed or removed",
		made.Load(), flips.Load(), landed.Load(), refused.Load(), invalid.Load(), failed.Load(), escaped)
	// Every refused call is one deny record, with its rule.
	denies := src.wantDenials(t, &refusals)
	rules := map[string]int{}
	for _, d := range denies {
		rules[d.Event.Annotation(audit.AnnotationRule)]++
	}
	t.Logf("%d refused calls, %d deny records in the audit log: %v", refusals.count(), len(denies), rules)
	if n := refused.Load() + invalid.Load(); int64(refusals.count()) != n || int64(len(denies)) != n {
		t.Errorf("%d calls refused, %d counted by their audit IDs, %d deny records", n, refusals.count(), len(denies))
	}
	if landed.Load() == 0 || refused.Load() == 0 || flips.Load() < 10 {
		t.Fatalf("the race did not exercise both states: %d landed, %d refused, %d flips", landed.Load(), refused.Load(), flips.Load())
	}
	// Links created from the swapped directory point inside the roots.
	entries, _ := os.ReadDir(inside)
	for _, e := range entries {
		if target, err := os.Readlink(filepath.Join(inside, e.Name())); err == nil && !isBelow(target, k) {
			t.Errorf("%s links out of the kubelet dir, to %s", e.Name(), target)
		}
	}
}

// isBelow reports whether p is dir or below it.
func isBelow(p, dir string) bool {
	rel, err := filepath.Rel(dir, p)
	return err == nil && rel != ".." && !filepath.IsAbs(rel) && (len(rel) < 3 || rel[:3] != "../")
}
