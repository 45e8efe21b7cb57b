package confine

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"testing"
)

// TestRefusePodLinkAt places links in pod directories for every kind of
// caller: the CSI publish path takes a link from anyone, a pod's own
// directory from that pod, any place from the host, and nothing else.
func TestRefusePodLinkAt(t *testing.T) {
	const k = "/var/lib/kubelet"
	c := mustNew(t, Options{Flavour: Linux, Roots: []string{k, "/csi"}})
	podA := Caller{Kind: CallerInPod, Pod: "aaaa"}
	unattributed := Caller{Kind: CallerUnattributed}
	otherPod := func(who string) string {
		return ` lies in the directory of pod bbbb (/var/lib/kubelet/pods/bbbb), and ` + who +
			`; a link may be placed in a pod's directory only by that pod, by a process on the host, or at the pod's CSI publish path /var/lib/kubelet/pods/bbbb/volumes/kubernetes.io~csi/<volume>/mount (confinement rule pod-link)`
	}
	cases := map[string]struct {
		caller Caller
		link   string
		msg    string // "" when allowed
	}{
		"publish path of another pod":     {caller: podA, link: k + "/pods/bbbb/volumes/kubernetes.io~csi/pv1/mount"},
		"publish path, caller unknown":    {caller: unattributed, link: k + "/pods/bbbb/volumes/kubernetes.io~csi/pv1/mount"},
		"own pod's directory":             {caller: podA, link: k + "/pods/aaaa/volumes/kubernetes.io~empty-dir/x/l"},
		"host, anywhere":                  {caller: Caller{Kind: CallerOnHost}, link: k + "/pods/bbbb/etc-hosts"},
		"agent without identification":    {caller: Caller{Kind: CallerUnidentified}, link: k + "/pods/bbbb/etc-hosts"},
		"outside the pods directory":      {caller: unattributed, link: k + "/plugins/kubernetes.io/csi/drv/h/globalmount"},
		"a working dir":                   {caller: unattributed, link: "/csi/pods/bbbb/x"},
		"a pods directory in a pod's dir": {caller: podA, link: k + "/pods/aaaa/pods/bbbb/x"},
		"another pod's emptyDir": {caller: podA, link: k + "/pods/bbbb/volumes/kubernetes.io~empty-dir/scratch/l",
			msg: `path "/var/lib/kubelet/pods/bbbb/volumes/kubernetes.io~empty-dir/scratch/l"` + otherPod("the caller runs in pod aaaa")},
		"another pod's etc-hosts": {caller: podA, link: k + "/pods/bbbb/etc-hosts",
			msg: `path "/var/lib/kubelet/pods/bbbb/etc-hosts"` + otherPod("the caller runs in pod aaaa")},
		"another pod's containers": {caller: podA, link: k + "/pods/bbbb/containers/app/0.log",
			msg: `path "/var/lib/kubelet/pods/bbbb/containers/app/0.log"` + otherPod("the caller runs in pod aaaa")},
		"another pod's directory itself": {caller: podA, link: k + "/pods/bbbb",
			msg: `path "/var/lib/kubelet/pods/bbbb"` + otherPod("the caller runs in pod aaaa")},
		"below a publish path": {caller: podA, link: k + "/pods/bbbb/volumes/kubernetes.io~csi/pv1/mount/x",
			msg: `path "/var/lib/kubelet/pods/bbbb/volumes/kubernetes.io~csi/pv1/mount/x"` + otherPod("the caller runs in pod aaaa")},
		"next to a publish path": {caller: podA, link: k + "/pods/bbbb/volumes/kubernetes.io~csi/pv1/vol_data.json",
			msg: `path "/var/lib/kubelet/pods/bbbb/volumes/kubernetes.io~csi/pv1/vol_data.json"` + otherPod("the caller runs in pod aaaa")},
		"caller unknown, not the publish path": {caller: unattributed, link: k + "/pods/bbbb/etc-hosts",
			msg: `path "/var/lib/kubelet/pods/bbbb/etc-hosts"` + otherPod("the caller could not be attributed to a pod")},
		"the pods directory": {caller: podA, link: k + "/pods",
			msg: `path "/var/lib/kubelet/pods" is the pods directory /var/lib/kubelet/pods, which holds every pod's directory, and the caller runs in pod aaaa; only a process on the host may place a link there (confinement rule pod-link)`},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			err := c.RefusePodLinkAt(tc.caller, tc.link, tc.link)
			if tc.msg == "" {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			var r *Refusal
			if !errors.As(err, &r) || r.Rule != RulePodLink || r.Rule.Malformed() {
				t.Fatalf("%v, want a pod-link refusal", err)
			}
			if err.Error() != tc.msg {
				t.Fatalf("message\n%s\nwant\n%s", err, tc.msg)
			}
		})
	}
}

// TestRefusePodLinkTo lets a link lead into a pod's directory only from
// inside that same pod's directory.
func TestRefusePodLinkTo(t *testing.T) {
	const k = "/var/lib/kubelet"
	c := mustNew(t, Options{Flavour: Linux, Roots: []string{k}})
	staging := k + "/plugins/kubernetes.io/csi/drv/h/globalmount"
	cases := map[string]struct {
		source, link string
		msg          string
	}{
		"staging to publish path": {source: staging, link: k + "/pods/bbbb/volumes/kubernetes.io~csi/pv1/mount"},
		"inside one pod":          {source: k + "/pods/aaaa/data", link: k + "/pods/aaaa/volumes/kubernetes.io~empty-dir/x/l"},
		"another pod's secret": {source: k + "/pods/bbbb/volumes/kubernetes.io~secret/token", link: k + "/pods/aaaa/volumes/kubernetes.io~empty-dir/x/l",
			msg: `source_path: path "/var/lib/kubelet/pods/bbbb/volumes/kubernetes.io~secret/token" leads into the directory of pod bbbb (/var/lib/kubelet/pods/bbbb); a link may lead into a pod's directory only from inside that same pod's directory, and the new link "/var/lib/kubelet/pods/aaaa/volumes/kubernetes.io~empty-dir/x/l" is not there (confinement rule pod-link)`},
		"from outside the pods": {source: k + "/pods/bbbb/volumes", link: k + "/plugins/x/l",
			msg: `source_path: path "/var/lib/kubelet/pods/bbbb/volumes" leads into the directory of pod bbbb (/var/lib/kubelet/pods/bbbb); a link may lead into a pod's directory only from inside that same pod's directory, and the new link "/var/lib/kubelet/plugins/x/l" is not there (confinement rule pod-link)`},
		"the pods directory": {source: k + "/pods", link: k + "/pods/aaaa/l",
			msg: `source_path: path "/var/lib/kubelet/pods" leads to the pods directory /var/lib/kubelet/pods; a link may lead into a pod's directory only from inside that same pod's directory, and the new link "/var/lib/kubelet/pods/aaaa/l" is not there (confinement rule pod-link)`},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			err := Named("source_path", c.RefusePodLinkTo(tc.source, tc.source, tc.link))
			if tc.msg == "" {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			if err == nil || err.Error() != tc.msg {
				t.Fatalf("message\n%v\nwant\n%s", err, tc.msg)
			}
		})
	}
}

// TestPodLinkOnWindows compares the kubelet's names and pod UIDs as NTFS
// does, folding ASCII case, so that another spelling of a pod's directory
// is still that pod's.
func TestPodLinkOnWindows(t *testing.T) {
	c := mustNew(t, Options{Flavour: Windows, Roots: []string{`C:\var\lib\kubelet`}})
	podA := Caller{Kind: CallerInPod, Pod: "aaaa"}
	for link, allowed := range map[string]bool{
		`C:\var\lib\kubelet\pods\bbbb\volumes\kubernetes.io~csi\pv1\mount`: true,
		`c:\VAR\lib\kubelet\PODS\bbbb\Volumes\Kubernetes.IO~CSI\pv1\MOUNT`: true,
		`C:\var\lib\kubelet\PODS\AAAA\etc-hosts`:                           true,
		`C:\var\lib\kubelet\PODS\BBBB\etc-hosts`:                           false,
		`C:\var\lib\kubelet\pods\bbbb\volumes\kubernetes.io~empty-dir\x\l`: false,
	} {
		err := c.RefusePodLinkAt(podA, link, link)
		if (err == nil) != allowed {
			t.Errorf("%s: %v, want allowed %v", link, err, allowed)
		}
	}
	err := c.RefusePodLinkTo(`C:\var\lib\kubelet\pods\BBBB\x`, `C:\var\lib\kubelet\pods\BBBB\x`, `C:\var\lib\kubelet\pods\bbbb\volumes\kubernetes.io~empty-dir\v\l`)
	if err != nil {
		t.Errorf("a link inside one pod's directory, spelt in two cases: %v", err)
	}
}

func TestCallerFrom(t *testing.T) {
	if got := CallerFrom(context.Background()); got.Kind != CallerUnidentified {
		t.Fatalf("CallerFrom(no caller) = %+v, want CallerUnidentified", got)
	}
	want := Caller{Kind: CallerInPod, Pod: "aaaa"}
	if got := CallerFrom(WithCaller(context.Background(), want)); got != want {
		t.Fatalf("CallerFrom = %+v, want %+v", got, want)
	}
	if (Caller{}).Kind != CallerUnattributed {
		t.Fatal("the zero Caller is not the most restricted kind")
	}
}

// TestParentOfAPlainPath opens the directory of a new entry through the
// root and reports its host path, on the host's flavour: the final path of
// the opened directory, read back as a name below the root as configured.
func TestParentOfAPlainPath(t *testing.T) {
	k := t.TempDir()
	if err := os.MkdirAll(filepath.Join(k, "pods", "aaaa"), 0o755); err != nil {
		t.Fatal(err)
	}
	flavour := Linux
	if runtime.GOOS == "windows" {
		flavour = Windows
	}
	c := mustNew(t, Options{Flavour: flavour, Roots: []string{k}})
	for _, p := range []string{filepath.Join(k, "pods", "aaaa", "l"), filepath.Join(k, "l")} {
		h, err := c.Open(p, ResolveParent)
		if err != nil {
			t.Fatal(err)
		}
		dir, base, at, err := h.Parent()
		if err != nil {
			t.Fatalf("Parent(%s): %v", p, err)
		}
		_ = dir.Close()
		_ = h.Close()
		if at != p || base != "l" {
			t.Errorf("Parent(%s) = %q, %q; want the path itself and l", p, at, base)
		}
	}
	h, err := c.Open(k, ResolveParent)
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	if _, _, _, err := h.Parent(); err == nil {
		t.Error("Parent of the root itself succeeded")
	}
}
