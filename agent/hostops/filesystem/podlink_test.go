package filesystem

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/pipeguard/pipeguard/agent/confine"
)

// TestLocalPodLink creates links for callers of each kind: the CSI publish
// link of a workload pod works for a driver pod and an unattributed
// caller; a link in another pod's directory, or into one, is refused with
// rule pod-link and not created.
func TestLocalPodLink(t *testing.T) {
	needSymlinks(t)
	k := t.TempDir()
	pod := func(uid string, names ...string) string {
		return filepath.Join(append([]string{k, "pods", uid}, names...)...)
	}
	staging := filepath.Join(k, "plugins", "kubernetes.io", "csi", "drv", "h", "globalmount")
	for _, d := range []string{staging, pod("work", "volumes", "kubernetes.io~csi", "pv1"), pod("victim", "volumes", "kubernetes.io~empty-dir", "data"), pod("attacker", "volumes", "kubernetes.io~empty-dir", "x")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	fs := rooted(t, k)
	in := func(c confine.Caller) context.Context { return confine.WithCaller(context.Background(), c) }
	driver := in(confine.Caller{Kind: confine.CallerInPod, Pod: "driver"})
	attacker := in(confine.Caller{Kind: confine.CallerInPod, Pod: "attacker"})
	unknown := in(confine.Caller{})

	publish := pod("work", "volumes", "kubernetes.io~csi", "pv1", "mount")
	for name, ctx := range map[string]context.Context{"driver pod": driver, "unattributed": unknown} {
		if err := fs.CreateSymlink(ctx, staging, publish); err != nil {
			t.Fatalf("%s: the publish link: %v", name, err)
		}
		if got, err := os.Readlink(publish); err != nil || got != staging {
			t.Fatalf("%s: publish link -> %q, %v", name, got, err)
		}
		if err := os.Remove(publish); err != nil {
			t.Fatal(err)
		}
	}
	if err := fs.CreateSymlink(attacker, staging, pod("attacker", "volumes", "kubernetes.io~empty-dir", "x", "own")); err != nil {
		t.Fatalf("a link in the caller's own pod directory: %v", err)
	}

	for name, tc := range map[string]struct {
		ctx            context.Context
		source, target string
		field          string
	}{
		"into another pod's emptyDir": {attacker, staging, pod("victim", "volumes", "kubernetes.io~empty-dir", "data", "l"), "target_path"},
		"another pod's etc-hosts":     {attacker, staging, pod("victim", "etc-hosts"), "target_path"},
		"unattributed, not a publish": {unknown, staging, pod("victim", "etc-hosts"), "target_path"},
		"from own pod into another":   {attacker, pod("victim", "volumes"), pod("attacker", "volumes", "kubernetes.io~empty-dir", "x", "steal"), "source_path"},
		"publish into another pod":    {driver, pod("victim", "volumes"), publish, "source_path"},
	} {
		t.Run(name, func(t *testing.T) {
			err := fs.CreateSymlink(tc.ctx, tc.source, tc.target)
			var r *confine.Refusal
			if !errors.As(err, &r) || r.Rule != confine.RulePodLink || r.Field != tc.field {
				t.Fatalf("%v, want a pod-link refusal of %s", err, tc.field)
			}
			if _, err := os.Lstat(tc.target); !os.IsNotExist(err) {
				t.Fatalf("the refused link exists: %v", err)
			}
		})
	}
}
