//go:build linux

package app

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	fsv1 "github.com/kubernetes-csi/csi-proxy/client/api/filesystem/v1"
	fsv2alpha1 "github.com/kubernetes-csi/csi-proxy/client/api/filesystem/v2alpha1"
	"golang.org/x/sys/unix"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/pipeguard/pipeguard/agent/audit"
)

// confineMount mounts, with unix.Mount's arguments, and unmounts when the
// test ends, before its temp dirs are removed (which would otherwise walk
// into the mount). It skips the test where mounting is not allowed.
func confineMount(t testing.TB, source, target, fstype string, flags uintptr) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("mounting needs root")
	}
	if err := unix.Mount(source, target, fstype, flags, ""); err != nil {
		t.Skipf("cannot mount here (an unprivileged container?): mount %s on %s: %v", source, target, err)
	}
	t.Cleanup(func() {
		// Not mounted any more (EINVAL), or its mount point removed (ENOENT).
		if err := unix.Unmount(target, unix.MNT_DETACH); err != nil && err != unix.EINVAL && err != unix.ENOENT {
			t.Errorf("unmounting %s: %v", target, err)
		}
	})
}

// TestConfineRemovalNeverCrossesMounts mounts, in two emptyDir volumes of
// a pod inside the kubelet dir, a bind mount of a directory outside the
// roots on the same file system (same device: st_dev cannot tell it
// apart) and a tmpfs from outside the roots, and empties and removes the
// volumes, the mounts and what lies below them through the API: every call
// is refused with rule mount-point and its message, nothing outside and
// nothing in the volumes is removed, and each refusal is one deny record of
// the audit log, which verifies.
func TestConfineRemovalNeverCrossesMounts(t *testing.T) {
	r, src := startAudited(t, Options{})
	k := r.kubelet
	outside := outsideTree(t, k)
	tmpfs := filepath.Join(filepath.Dir(k), "outside-tmpfs")
	if err := os.MkdirAll(tmpfs, 0o755); err != nil {
		t.Fatal(err)
	}
	confineMount(t, "tmpfs", tmpfs, "tmpfs", 0)
	if err := os.MkdirAll(filepath.Join(tmpfs, "keep", "deeper"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(tmpfs, "keep", "file"), []byte("data"), 0o600); err != nil {
		t.Fatal(err)
	}
	vols := filepath.Join(k, "pods", "uid", "volumes", "kubernetes.io~empty-dir")
	sources := map[string]string{"same-fs bind mount": outside, "tmpfs": tmpfs}
	for name, source := range sources {
		vol := filepath.Join(vols, name)
		for _, d := range []string{"m", "mine/deeper"} {
			if err := os.MkdirAll(filepath.Join(vol, d), 0o755); err != nil {
				t.Fatal(err)
			}
		}
		if err := os.WriteFile(filepath.Join(vol, "mine", "file"), []byte("x"), 0o600); err != nil {
			t.Fatal(err)
		}
		confineMount(t, source, filepath.Join(vol, "m"), "", unix.MS_BIND)
	}
	before, beforeTmpfs := snapshot(t, outside), snapshot(t, tmpfs)
	v1 := fsv1.NewFilesystemClient(r.dial(t, "filesystem", "v1"))
	v2 := fsv2alpha1.NewFilesystemClient(r.dial(t, "filesystem", "v2alpha1"))
	ctx := context.Background()
	rmdirContents := func(p string) func(...grpc.CallOption) error {
		return func(o ...grpc.CallOption) error {
			_, err := v2.RmdirContents(ctx, &fsv2alpha1.RmdirContentsRequest{Path: p}, o...)
			return err
		}
	}
	rmdirForce := func(p string) func(...grpc.CallOption) error {
		return func(o ...grpc.CallOption) error {
			_, err := v1.Rmdir(ctx, &fsv1.RmdirRequest{Path: p, Force: true}, o...)
			return err
		}
	}
	refused := func(p, what, op string) string {
		return `path: path "` + p + `" ` + what + ` (a bind mount or another file system, whose files are not the allowed root's to remove); ` +
			op + ` does not cross mount points and removed nothing: unmount it first (confinement rule mount-point)`
	}

	const rule = "confinement/mount-point"
	var refusals refusals
	for name := range sources {
		vol := filepath.Join(vols, name)
		m := filepath.Join(vol, "m")
		cases := map[string]struct {
			call func(...grpc.CallOption) error
			msg  string
		}{
			"RmdirContents of the volume":    {rmdirContents(vol), refused(vol, `holds a mount point at "`+m+`"`, "RmdirContents")},
			"Rmdir with force of the volume": {rmdirForce(vol), refused(vol, `holds a mount point at "`+m+`"`, "Rmdir")},
			"RmdirContents of the mount":     {rmdirContents(m), refused(m, "is a mount point", "RmdirContents")},
			"Rmdir with force of the mount":  {rmdirForce(m), refused(m, "is a mount point", "Rmdir")},
			"RmdirContents below the mount":  {rmdirContents(m + "/keep"), refused(m+"/keep", `lies below a mount point at "`+m+`"`, "RmdirContents")},
			"Rmdir with force below":         {rmdirForce(m + "/keep"), refused(m+"/keep", `lies below a mount point at "`+m+`"`, "Rmdir")},
		}
		for cname, tc := range cases {
			t.Run(name+"/"+cname, func(t *testing.T) {
				err := refusals.call(rule, tc.call)
				s, _ := status.FromError(err)
				if s.Code() != codes.PermissionDenied || s.Message() != tc.msg {
					t.Fatalf("%v %q\nwant PermissionDenied %q", s.Code(), s.Message(), tc.msg)
				}
			})
		}
	}
	if n := wantUnchanged(t, outside, before) + wantUnchanged(t, tmpfs, beforeTmpfs); n != 0 {
		t.Fatalf("%d entries outside the roots changed", n)
	}
	for name := range sources {
		if _, err := os.Stat(filepath.Join(vols, name, "mine", "file")); err != nil {
			t.Errorf("a refused call removed the volume's own files: %v", err)
		}
	}
	denies := src.wantDenials(t, &refusals)
	for _, d := range denies {
		if got := d.Event.Annotation(audit.AnnotationRule); got != rule {
			t.Errorf("deny record %s has rule %s", d.Event.AuditID, got)
		}
	}
	if len(denies) != 12 {
		t.Errorf("%d deny records, want 12", len(denies))
	}
}

// TestConfineRemovalRacesMounts keeps bind-mounting a directory outside the
// roots into a tree and unmounting it, for 3 seconds, while two clients
// keep refilling the tree and emptying and removing it through the API.
// The walk checks every directory on the handle it goes on with, so a
// mount that appears after it looked is met there and never entered:
// whatever the interleaving, nothing outside changes. Each refused call is
// one deny record, with rule mount-point, and the log verifies.
func TestConfineRemovalRacesMounts(t *testing.T) {
	r, src := startAudited(t, Options{})
	k := r.kubelet
	outside := outsideTree(t, k)
	tree := filepath.Join(k, "pods", "uid", "volumes", "kubernetes.io~empty-dir", "race")
	mp := filepath.Join(tree, "a", "m")
	if err := os.MkdirAll(mp, 0o755); err != nil {
		t.Fatal(err)
	}
	// Probe once, skipping where mounting is not allowed; the cleanup
	// detaches whatever the race leaves mounted.
	confineMount(t, outside, mp, "", unix.MS_BIND)
	if err := unix.Unmount(mp, unix.MNT_DETACH); err != nil {
		t.Fatal(err)
	}
	before := snapshot(t, outside)

	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	var wg sync.WaitGroup
	var mounts atomic.Int64
	wg.Go(func() {
		for ctx.Err() == nil {
			_ = os.MkdirAll(mp, 0o755)
			if unix.Mount(outside, mp, "", unix.MS_BIND, "") == nil {
				mounts.Add(1)
				// The racer holds its mount a moment on purpose, so that calls
				// meet it mounted as well as unmounted; no result waits on it.
				time.Sleep(time.Millisecond)
				_ = unix.Unmount(mp, unix.MNT_DETACH)
			}
		}
	})
	var made, landed, refused, appeared, failed atomic.Int64
	var refusals refusals
	for c := range 2 {
		v1 := fsv1.NewFilesystemClient(r.dial(t, "filesystem", "v1"))
		v2 := fsv2alpha1.NewFilesystemClient(r.dial(t, "filesystem", "v2alpha1"))
		wg.Go(func() {
			for i := 0; ctx.Err() == nil; i++ {
				_ = os.MkdirAll(filepath.Join(tree, "a", "b"), 0o755)
				_ = os.WriteFile(filepath.Join(tree, "a", "b", "f"), nil, 0o600)
				err := refusals.call("confinement/mount-point", func(o ...grpc.CallOption) error {
					if (c+i)%2 == 0 {
						_, err := v2.RmdirContents(context.Background(), &fsv2alpha1.RmdirContentsRequest{Path: tree}, o...)
						return err
					}
					_, err := v1.Rmdir(context.Background(), &fsv1.RmdirRequest{Path: filepath.Join(tree, "a"), Force: true}, o...)
					return err
				})
				made.Add(1)
				switch status.Code(err) {
				case codes.OK:
					landed.Add(1)
				case codes.PermissionDenied:
					refused.Add(1)
					if strings.Contains(status.Convert(err).Message(), "as it appeared while") {
						appeared.Add(1)
					}
				default:
					failed.Add(1) // EBUSY and the like: the kernel refused to unlink a mount point
				}
			}
		})
	}
	wg.Wait()
	changed := wantUnchanged(t, outside, before)
	t.Logf("%d calls in 3s (%d mounts): %d removed, %d refused with mount-point (%d of them for a mount that appeared after the first look), %d failed on the host; %d entries outside changed",
		made.Load(), mounts.Load(), landed.Load(), refused.Load(), appeared.Load(), failed.Load(), changed)
	src.wantDenials(t, &refusals)
	if refused.Load() == 0 || landed.Load() == 0 {
		t.Fatalf("the race did not exercise both states: %d removed, %d refused", landed.Load(), refused.Load())
	}
}
