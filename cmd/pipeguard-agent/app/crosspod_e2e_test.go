//go:build linux

package app

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	fsv1 "github.com/kubernetes-csi/csi-proxy/client/api/filesystem/v1"
	fsv1beta1 "github.com/kubernetes-csi/csi-proxy/client/api/filesystem/v1beta1"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/pipeguard/pipeguard/agent/audit"
	"github.com/pipeguard/pipeguard/agent/identity"
)

// The pods of the cross-pod tests, by UID: a CSI node plugin, the workload
// it publishes a volume for, a tenant that attacks, and its victim.
const (
	podDriver   = "0d0d0d0d-0000-4000-8000-00000000000d"
	podWorkload = "0e0e0e0e-0000-4000-8000-00000000000e"
	podAttacker = "0a0a0a0a-0000-4000-8000-00000000000a"
	podVictim   = "0b0b0b0b-0000-4000-8000-00000000000b"
)

// crossPodPeer identifies callers as identity.Peer does, then places them
// in pod uid; with mapped false, in no known place (an unattributed
// caller, as on Windows without a CRI endpoint).
func crossPodPeer(uid string, mapped bool) identity.PeerFunc {
	return func(conn net.Conn) (*identity.Caller, func(), error) {
		c, release, err := identity.Peer(conn)
		if err != nil {
			return nil, nil, err
		}
		c.PodUID, c.PodMapped = uid, mapped
		return c, release, nil
	}
}

// crossPodNode lays out a kubelet dir as the kubelet leaves it: a staged
// CSI volume, the publish directory of the workload pod (kubelet creates it
// and its vol_data.json before NodePublishVolume), and the victim's and the
// attacker's pod directories. It returns the kubelet dir and the staging
// path.
func crossPodNode(t testing.TB) (k, staging string) {
	t.Helper()
	k = filepath.Join(t.TempDir(), "kubelet")
	staging = filepath.Join(k, "plugins", "kubernetes.io", "csi", "drv.example.com", "4c1a5e", "globalmount")
	for _, d := range []string{
		staging,
		filepath.Join(k, "pods", podWorkload, "volumes", "kubernetes.io~csi", "pv1"),
		filepath.Join(k, "pods", podVictim, "volumes", "kubernetes.io~empty-dir", "cache"),
		filepath.Join(k, "pods", podVictim, "volumes", "kubernetes.io~secret", "token"),
		filepath.Join(k, "pods", podVictim, "containers", "app"),
		filepath.Join(k, "pods", podAttacker, "volumes", "kubernetes.io~empty-dir", "x"),
	} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for f, data := range map[string]string{
		filepath.Join(staging, "data"): "volume",
		filepath.Join(k, "pods", podWorkload, "volumes", "kubernetes.io~csi", "pv1", "vol_data.json"): `{"driverName":"drv.example.com"}`,
		filepath.Join(k, "pods", podVictim, "etc-hosts"):                                              "127.0.0.1 localhost",
		filepath.Join(k, "pods", podVictim, "volumes", "kubernetes.io~secret", "token", "token"):      "secret",
	} {
		if err := os.WriteFile(f, []byte(data), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return k, staging
}

// TestCrossPodPublishLinkWorks publishes a staged volume to the workload
// pod as CSI node plugins do, from the driver's pod and from a caller the
// agent cannot attribute to a pod (a Windows node without a CRI endpoint):
// the link is created at the workload's publish path, points at the
// staging path, and is removed on unpublish. No call is refused.
func TestCrossPodPublishLinkWorks(t *testing.T) {
	k, staging := crossPodNode(t)
	publish := filepath.Join(k, "pods", podWorkload, "volumes", "kubernetes.io~csi", "pv1", "mount")
	for name, peer := range map[string]identity.PeerFunc{
		"driver pod":   crossPodPeer(podDriver, true),
		"unattributed": crossPodPeer("", false),
	} {
		t.Run(name, func(t *testing.T) {
			r, src := startAudited(t, Options{KubeletPath: k, Peer: peer})
			v1 := fsv1.NewFilesystemClient(r.dial(t, "filesystem", "v1"))
			v1beta1 := fsv1beta1.NewFilesystemClient(r.dial(t, "filesystem", "v1beta1"))
			ctx := context.Background()
			link := map[string]func() error{
				"v1 CreateSymlink": func() error {
					_, err := v1.CreateSymlink(ctx, &fsv1.CreateSymlinkRequest{SourcePath: staging, TargetPath: publish})
					return err
				},
				"v1beta1 LinkPath": func() error {
					_, err := v1beta1.LinkPath(ctx, &fsv1beta1.LinkPathRequest{SourcePath: staging, TargetPath: publish})
					return err
				},
			}
			for call, f := range link {
				if err := f(); err != nil {
					t.Fatalf("%s: %v", call, err)
				}
				if got, err := os.Readlink(publish); err != nil || got != staging {
					t.Fatalf("%s: %s -> %q, %v; want %s", call, publish, got, err, staging)
				}
				if resp, err := v1.IsSymlink(ctx, &fsv1.IsSymlinkRequest{Path: publish}); err != nil || !resp.IsSymlink {
					t.Fatalf("%s: IsSymlink = %v, %v", call, resp, err)
				}
				if _, err := v1.Rmdir(ctx, &fsv1.RmdirRequest{Path: publish}); err != nil {
					t.Fatalf("%s: unpublish: %v", call, err)
				}
			}
			if _, err := os.Stat(filepath.Join(staging, "data")); err != nil {
				t.Fatalf("unpublishing touched the staged volume: %v", err)
			}
			src.wantDenials(t, &refusals{})
		})
	}
}

// TestCrossPodLinkRefused has a tenant pod place links in another pod's
// directory, in every spot that matters (an emptyDir, a container's
// directory, etc-hosts, the pod's directory itself, and through a link in
// its own emptyDir), and lead links from its own directory into the
// victim's secret. Each is refused with rule pod-link and its message, the
// victim's directory is unchanged, and each refusal is one deny record of
// the audit log, which verifies. An unattributed caller is refused the
// same places; the tenant's own directory stays its own.
func TestCrossPodLinkRefused(t *testing.T) {
	k, staging := crossPodNode(t)
	pod := func(uid string, names ...string) string {
		return filepath.Join(append([]string{k, "pods", uid}, names...)...)
	}
	own := pod(podAttacker, "volumes", "kubernetes.io~empty-dir", "x")
	// A link the tenant can make in its own volume, from inside its
	// container: relative, so it stays inside the kubelet dir.
	if err := os.Symlink("../../../../"+podVictim+"/volumes/kubernetes.io~empty-dir/cache", filepath.Join(own, "to-victim")); err != nil {
		t.Fatal(err)
	}
	victim := pod(podVictim)
	before := snapshot(t, victim)
	attacker, attackerLog := startAudited(t, Options{KubeletPath: k, Peer: crossPodPeer(podAttacker, true)})
	unknown, unknownLog := startAudited(t, Options{KubeletPath: k, Peer: crossPodPeer("", false)})
	ctx := context.Background()

	placed := func(p, who string) string {
		return `target_path: path "` + p + `" lies in the directory of pod ` + podVictim + ` (` + victim + `), and ` + who +
			`; a link may be placed in a pod's directory only by that pod, by a process on the host, or at the pod's CSI publish path ` +
			victim + `/volumes/kubernetes.io~csi/<volume>/mount (confinement rule pod-link)`
	}
	const inA = "the caller runs in pod " + podAttacker
	cases := map[string]struct {
		agent          *running
		source, target string
		msg            string
	}{
		"into the victim's emptyDir": {attacker, staging, pod(podVictim, "volumes", "kubernetes.io~empty-dir", "cache", "l"),
			placed(pod(podVictim, "volumes", "kubernetes.io~empty-dir", "cache", "l"), inA)},
		"into a container's directory": {attacker, staging, pod(podVictim, "containers", "app", "l"),
			placed(pod(podVictim, "containers", "app", "l"), inA)},
		"over etc-hosts": {attacker, staging, pod(podVictim, "etc-hosts"),
			placed(pod(podVictim, "etc-hosts"), inA)},
		"through a link in its own emptyDir": {attacker, staging, filepath.Join(own, "to-victim", "l"),
			`target_path: path "` + filepath.Join(own, "to-victim", "l") + `" lies in the directory of pod ` + podVictim + ` (` + victim + `), and ` + inA +
				`; a link may be placed in a pod's directory only by that pod, by a process on the host, or at the pod's CSI publish path ` +
				victim + `/volumes/kubernetes.io~csi/<volume>/mount (confinement rule pod-link)`},
		"as a new pod's directory": {attacker, staging, pod("0f0f0f0f-0000-4000-8000-00000000000f"),
			`target_path: path "` + pod("0f0f0f0f-0000-4000-8000-00000000000f") + `" lies in the directory of pod 0f0f0f0f-0000-4000-8000-00000000000f (` +
				pod("0f0f0f0f-0000-4000-8000-00000000000f") + `), and ` + inA + `; a link may be placed in a pod's directory only by that pod, by a process on the host, or at the pod's CSI publish path ` +
				pod("0f0f0f0f-0000-4000-8000-00000000000f") + `/volumes/kubernetes.io~csi/<volume>/mount (confinement rule pod-link)`},
		"from its own emptyDir to the victim's secret": {attacker, pod(podVictim, "volumes", "kubernetes.io~secret", "token"), filepath.Join(own, "steal"),
			`source_path: path "` + pod(podVictim, "volumes", "kubernetes.io~secret", "token") + `" leads into the directory of pod ` + podVictim + ` (` + victim +
				`); a link may lead into a pod's directory only from inside that same pod's directory, and the new link "` + filepath.Join(own, "steal") + `" is not there (confinement rule pod-link)`},
		"unattributed, over etc-hosts": {unknown, staging, pod(podVictim, "etc-hosts"),
			placed(pod(podVictim, "etc-hosts"), "the caller could not be attributed to a pod")},
		"unattributed, into the emptyDir": {unknown, staging, pod(podVictim, "volumes", "kubernetes.io~empty-dir", "cache", "l"),
			placed(pod(podVictim, "volumes", "kubernetes.io~empty-dir", "cache", "l"), "the caller could not be attributed to a pod")},
	}
	const rule = "confinement/pod-link"
	tracked := map[*running]*refusals{attacker: {}, unknown: {}}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			v1 := fsv1.NewFilesystemClient(tc.agent.dial(t, "filesystem", "v1"))
			err := tracked[tc.agent].call(rule, func(o ...grpc.CallOption) error {
				_, err := v1.CreateSymlink(ctx, &fsv1.CreateSymlinkRequest{SourcePath: tc.source, TargetPath: tc.target}, o...)
				return err
			})
			s, _ := status.FromError(err)
			if s.Code() != codes.PermissionDenied || s.Message() != tc.msg {
				t.Fatalf("%v %q\nwant PermissionDenied %q", s.Code(), s.Message(), tc.msg)
			}
		})
	}
	if n := wantUnchanged(t, victim, before); n != 0 {
		t.Fatalf("%d entries of the victim's pod directory changed", n)
	}
	if _, err := os.Lstat(pod("0f0f0f0f-0000-4000-8000-00000000000f")); !os.IsNotExist(err) {
		t.Fatalf("a pod directory was created as a link: %v", err)
	}
	// The tenant's own directory is its own.
	v1 := fsv1.NewFilesystemClient(attacker.dial(t, "filesystem", "v1"))
	if _, err := v1.CreateSymlink(ctx, &fsv1.CreateSymlinkRequest{SourcePath: staging, TargetPath: filepath.Join(own, "mine")}); err != nil {
		t.Fatalf("a link in the caller's own pod directory: %v", err)
	}
	for _, l := range []auditSource{attackerLog, unknownLog} {
		agent := attacker
		if l == unknownLog {
			agent = unknown
		}
		l.wantDenials(t, tracked[agent])
	}
	if n := tracked[attacker].count() + tracked[unknown].count(); n != len(cases) {
		t.Errorf("%d calls refused, want %d", n, len(cases))
	}
}

// TestCrossPodFlippedDir races link
// creation in a tenant's own emptyDir against the tenant swapping a
// directory there for a relative link into the victim's pod directory,
// for 3 seconds. The link is created through a handle on its directory
// and rule pod-link is applied to where that handle lies, so every link
// lands in the tenant's own directory or is refused: nothing is ever
// created in the victim's. Each refusal is one deny record, with rule
// pod-link (or symlink-escape, when the path changed under its first
// check), and the log verifies.
func TestCrossPodFlippedDir(t *testing.T) {
	k, staging := crossPodNode(t)
	own := filepath.Join(k, "pods", podAttacker, "volumes", "kubernetes.io~empty-dir", "x")
	victim := filepath.Join(k, "pods", podVictim)
	flip := filepath.Join(own, "flip")
	before := snapshot(t, victim)
	r, src := startAudited(t, Options{KubeletPath: k, Peer: crossPodPeer(podAttacker, true)})

	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	var wg sync.WaitGroup
	var flips atomic.Int64
	wg.Go(func() {
		for ctx.Err() == nil {
			_ = os.RemoveAll(flip)
			_ = os.Mkdir(flip, 0o755)
			_ = os.RemoveAll(flip)
			_ = os.Symlink("../../../../"+podVictim+"/volumes/kubernetes.io~empty-dir/cache", flip)
			flips.Add(1)
		}
	})
	var landed, refused, failed atomic.Int64
	var refusals refusals
	for c := range 2 {
		v1 := fsv1.NewFilesystemClient(r.dial(t, "filesystem", "v1"))
		wg.Go(func() {
			for i := 0; ctx.Err() == nil; i++ {
				// Any rule: the first check of the path may also find it
				// changing under it (symlink-escape, "could not be resolved").
				err := refusals.call("", func(o ...grpc.CallOption) error {
					_, err := v1.CreateSymlink(context.Background(), &fsv1.CreateSymlinkRequest{SourcePath: staging, TargetPath: fmt.Sprintf("%s/l%d-%d", flip, c, i)}, o...)
					return err
				})
				switch status.Code(err) {
				case codes.OK:
					landed.Add(1)
				case codes.PermissionDenied:
					refused.Add(1)
				default:
					failed.Add(1) // the directory was gone for a moment
				}
			}
		})
	}
	wg.Wait()
	changed := wantUnchanged(t, victim, before)
	t.Logf("%d links landed in the tenant's own directory, %d refused, %d failed on the host (%d flips); %d entries of the victim's directory changed",
		landed.Load(), refused.Load(), failed.Load(), flips.Load(), changed)
	rules := map[string]int{}
	for _, d := range src.wantDenials(t, &refusals) {
		rules[d.Event.Annotation(audit.AnnotationRule)]++
	}
	t.Logf("deny records by rule: %v", rules)
	if rules["confinement/pod-link"] == 0 || len(rules) > 2 || len(rules) == 2 && rules["confinement/symlink-escape"] == 0 {
		t.Errorf("deny records by rule %v, want pod-link and at most symlink-escape besides", rules)
	}
	if landed.Load() == 0 || refused.Load() == 0 {
		t.Fatalf("the race did not exercise both states: %d landed, %d refused", landed.Load(), refused.Load())
	}
}
