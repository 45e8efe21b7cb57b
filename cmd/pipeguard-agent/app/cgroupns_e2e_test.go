//go:build linux

package app

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	fsv1 "github.com/kubernetes-csi/csi-proxy/client/api/filesystem/v1"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/pipeguard/pipeguard/agent/audit"
	"github.com/pipeguard/pipeguard/agent/identity"
)

// cgroupPeer identifies callers as identity.Peer does, then describes them
// again from a procfs whose stat files are the caller's own and whose
// cgroup file reads cgroup: the parser and identity.Proc run as they do on
// a node, on the cgroup a node would show.
func cgroupPeer(t testing.TB, cgroup string) identity.PeerFunc {
	root := t.TempDir()
	return func(conn net.Conn) (*identity.Caller, func(), error) {
		c, release, err := identity.Peer(conn)
		if err != nil {
			return nil, nil, err
		}
		pid := strconv.Itoa(c.PID)
		files := map[string]string{"stat": "/proc/stat", filepath.Join(pid, "stat"): filepath.Join("/proc", pid, "stat")}
		for to, from := range files {
			b, err := os.ReadFile(from)
			if err != nil {
				return nil, nil, err
			}
			if err := os.MkdirAll(filepath.Dir(filepath.Join(root, to)), 0o755); err != nil {
				return nil, nil, err
			}
			if err := os.WriteFile(filepath.Join(root, to), b, 0o600); err != nil {
				return nil, nil, err
			}
		}
		if err := os.WriteFile(filepath.Join(root, pid, "cgroup"), []byte(cgroup), 0o600); err != nil {
			return nil, nil, err
		}
		c.Notes = nil
		return c, release, (&identity.Proc{Root: root}).Describe(c)
	}
}

// TestCgroupOutsideNamespaceRefused: an agent in its own cgroup namespace
// sees a tenant pod of its QoS class as "/../../kubepods-...-pod<uid>.slice".
// That caller is unattributed, not the host: it is refused every link in
// another pod's directory and a fake pod directory, as rule pod-link
// refuses a tenant, and each deny record says why it was not attributed.
// The same calls from a host cgroup pass, so the refusals are the
// attribution's.
func TestCgroupOutsideNamespaceRefused(t *testing.T) {
	k, staging := crossPodNode(t)
	pod := func(uid string, names ...string) string {
		return filepath.Join(append([]string{k, "pods", uid}, names...)...)
	}
	sys := strings.ReplaceAll(podAttacker, "-", "_")
	const cid = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
	escaped := "/../../kubepods-burstable-pod" + sys + ".slice/cri-containerd-" + cid + ".scope"
	outside, outsideLog := startAudited(t, Options{KubeletPath: k, Peer: cgroupPeer(t, "0::"+escaped+"\n")})
	host, hostLog := startAudited(t, Options{KubeletPath: k, Peer: cgroupPeer(t, "0::/system.slice/kubelet.service\n")})
	victim := pod(podVictim)
	fake := pod("0f0f0f0f-0000-4000-8000-00000000000f")
	const who = "the caller could not be attributed to a pod"
	placed := func(p, dir, uid string) string {
		return `target_path: path "` + p + `" lies in the directory of pod ` + uid + ` (` + dir + `), and ` + who +
			`; a link may be placed in a pod's directory only by that pod, by a process on the host, or at the pod's CSI publish path ` +
			dir + `/volumes/kubernetes.io~csi/<volume>/mount (confinement rule pod-link)`
	}
	cases := map[string]struct{ target, msg string }{
		"into another pod's emptyDir": {pod(podVictim, "volumes", "kubernetes.io~empty-dir", "cache", "l"),
			placed(pod(podVictim, "volumes", "kubernetes.io~empty-dir", "cache", "l"), victim, podVictim)},
		"into its own pod's emptyDir, which it cannot prove is its own": {pod(podAttacker, "volumes", "kubernetes.io~empty-dir", "x", "l"),
			placed(pod(podAttacker, "volumes", "kubernetes.io~empty-dir", "x", "l"), pod(podAttacker), podAttacker)},
		"as a fake pod's directory": {fake, placed(fake, fake, "0f0f0f0f-0000-4000-8000-00000000000f")},
		"beside the pods' directories": {pod("l"), `target_path: path "` + pod("l") + `" lies in the directory of pod l (` + pod("l") + `), and ` + who +
			`; a link may be placed in a pod's directory only by that pod, by a process on the host, or at the pod's CSI publish path ` +
			pod("l") + `/volumes/kubernetes.io~csi/<volume>/mount (confinement rule pod-link)`},
	}
	ctx := context.Background()
	v1 := fsv1.NewFilesystemClient(outside.dial(t, "filesystem", "v1"))
	var refused refusals
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			err := refused.call("confinement/pod-link", func(o ...grpc.CallOption) error {
				_, err := v1.CreateSymlink(ctx, &fsv1.CreateSymlinkRequest{SourcePath: staging, TargetPath: tc.target}, o...)
				return err
			})
			if s, _ := status.FromError(err); s.Code() != codes.PermissionDenied || s.Message() != tc.msg {
				t.Fatalf("%v %q\nwant PermissionDenied %q", s.Code(), s.Message(), tc.msg)
			}
			if _, err := os.Lstat(tc.target); !os.IsNotExist(err) {
				t.Fatalf("the refused link exists: %v", err)
			}
		})
	}
	note := `cgroup path "` + escaped + `" climbs out of the agent's cgroup namespace, so the caller is unattributed: neither a pod's nor the host's`
	for _, d := range outsideLog.wantDenials(t, &refused) {
		u := d.Event.User
		if !slices.Contains(u.Extra[audit.ExtraNote], note) || u.ExtraValue(audit.ExtraPodUID) != "" || u.ExtraValue(audit.ExtraContainerID) != "" {
			t.Errorf("deny record %s names the caller %+v; want no pod or container and note %q", d.Event.AuditID, u.Extra, note)
		}
	}
	if refused.count() != len(cases) {
		t.Errorf("%d calls refused, want %d", refused.count(), len(cases))
	}

	// From the host the same links are placed.
	hv1 := fsv1.NewFilesystemClient(host.dial(t, "filesystem", "v1"))
	for name, tc := range cases {
		if _, err := hv1.CreateSymlink(ctx, &fsv1.CreateSymlinkRequest{SourcePath: staging, TargetPath: tc.target}); err != nil {
			t.Errorf("%s, from the host: %v", name, err)
		}
	}
	hostLog.wantDenials(t, &refusals{})
}
