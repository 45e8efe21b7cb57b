package admission_test

import (
	"fmt"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/pipeguard/pipeguard/pipepath"
)

// ordinaryPaths are host paths ordinary pods and PersistentVolumes use.
// While the webhook is down, objects that use only these must be admitted,
// so the API server must not call the webhook for them.
var ordinaryPaths = []string{
	"/var/log", "/var/lib/kubelet", "/etc/cni/net.d", "/opt/cni/bin", "/etc/ssl/certs",
	"/run/containerd/containerd.sock", "/proc", "/", "/dev/shm", "/sys/fs/cgroup", "/lib/modules",
	"/var/lib/docker/containers", "/var/run/secrets-store.csi.k8s.io/", "/etc/kubernetes/pki",
	`C:\var\log`, `C:\var\lib\kubelet`, `C:\etc\kubernetes`, `C:\ProgramData\docker`,
	`C:\ProgramData\containerd\state`, `C:\ProgramData\Microsoft\Windows`, `C:\`, `C:/var/log/`, `c:\k`,
}

// ordinaryMounts are subPaths into ordinary host directories.
var ordinaryMounts = [][2]string{
	{"/var/log", "pods"},
	{"/var/lib/kubelet/", "plugins/kubernetes.io/csi"},
	{"/etc/kubernetes", "pki/ca.crt"},
	{`C:\var\lib\kubelet`, `plugins\kubernetes.io\csi`},
	{`C:\ProgramData\docker\`, "config"},
}

// bases are ordinary volume paths that corpus paths are put under as
// subPaths.
var bases = []string{"/", `C:\`, "/var/lib/kubelet", `C:\var\lib\kubelet\`}

func TestOrdinaryHostPathsSkipTheWebhook(t *testing.T) {
	f := loadFilter(t)
	check := func(what string, k kind, spec *corev1.PodSpec) {
		t.Helper()
		if why, ok := protectedSpec(spec); ok {
			t.Fatalf("%s: the ordinary list holds a protected path: %s", what, why)
		}
		if f.sends(t, k, k.wrap(*spec)) {
			t.Errorf("%s %s goes to the webhook, so it is refused while the webhook is down", k.gvk.Kind, what)
		}
	}
	for _, p := range ordinaryPaths {
		for i, k := range podKinds {
			spec := mountSpec(p, "", false, i%places)
			check(fmt.Sprintf("with hostPath %q", p), k, &spec)
		}
		for _, pv := range []*corev1.PersistentVolume{hostPathPV(p), localPV(p)} {
			if why, ok := protectedPV(pv); ok {
				t.Fatalf("the ordinary list holds a protected path: %s", why)
			}
			if f.sends(t, pvKind, pv) {
				t.Errorf("PersistentVolume with %+v goes to the webhook, so it is refused while the webhook is down", pv.Spec.PersistentVolumeSource)
			}
		}
	}
	for _, m := range ordinaryMounts {
		for _, k := range podKinds {
			for place := range places {
				spec := mountSpec(m[0], m[1], false, place)
				check(fmt.Sprintf("with hostPath %q and subPath %q (mount %d)", m[0], m[1], place), k, &spec)
			}
		}
	}
	// No host path at all.
	spec := mountSpec("/var/log", "", false, inContainer)
	spec.Volumes = spec.Volumes[:1]
	spec.Containers[0].VolumeMounts = spec.Containers[0].VolumeMounts[:1]
	for _, k := range podKinds {
		check("without host path", k, &spec)
	}
}

// miss is an object pipepath protects that the API server would not send.
type miss struct{ what, why string }

// differential evaluates f against objects built from every corpus path
// and against every corpus object, and returns those pipepath protects but
// f keeps from the webhook, and how many protected objects it checked.
func differential(t testing.TB, f *filter, c *corpus) (misses []miss, protected int) {
	t.Helper()
	podCheck := func(what string, k kind, spec corev1.PodSpec) {
		why, ok := protectedSpec(&spec)
		if !ok {
			return
		}
		protected++
		if !f.sends(t, k, k.wrap(spec)) {
			misses = append(misses, miss{fmt.Sprintf("%s %s", k.gvk.Kind, what), why})
		}
	}
	pvCheck := func(what string, pv *corev1.PersistentVolume) {
		why, ok := protectedPV(pv)
		if !ok {
			return
		}
		protected++
		if !f.sends(t, pvKind, pv) {
			misses = append(misses, miss{"PersistentVolume " + what, why})
		}
	}
	for _, p := range c.paths {
		for i, k := range podKinds {
			podCheck(fmt.Sprintf("hostPath %q", p), k, mountSpec(p, "", false, i%places))
			for j, base := range bases {
				place := (i + j) % places
				podCheck(fmt.Sprintf("hostPath %q subPath %q (mount %d)", base, p, place), k, mountSpec(base, p, false, place))
			}
		}
		pvCheck(fmt.Sprintf("hostPath %q", p), hostPathPV(p))
		pvCheck(fmt.Sprintf("local %q", p), localPV(p))
	}
	for _, o := range c.objects {
		if o.spec == nil {
			pvCheck("in "+o.file, o.obj.(*corev1.PersistentVolume))
			continue
		}
		why, ok := protectedSpec(o.spec)
		if !ok {
			continue
		}
		protected++
		if !f.sends(t, o.kind, o.obj) {
			misses = append(misses, miss{fmt.Sprintf("%s in %s", o.kind.gvk.Kind, o.file), why})
		}
	}
	return misses, protected
}

func TestPrefilterKeepsEveryProtectedPathOfTheCorpus(t *testing.T) {
	f := loadFilter(t)
	c := loadCorpus(t)
	misses, protected := differential(t, f, c)
	for i, m := range misses {
		if i == 20 {
			t.Errorf("and %d more", len(misses)-i)
			break
		}
		t.Errorf("%s is not sent to the webhook, but %s", m.what, m.why)
	}
	t.Logf("%d paths, %d manifest objects (%d real CSI driver objects), %d protected objects checked",
		len(c.paths), len(c.objects), c.real, protected)
	// A corpus without pipes would make this test pass on any filter.
	if protected < 1000 {
		t.Fatalf("only %d protected objects in the corpus", protected)
	}
}

func TestSubPathExprOnAHostPathAlwaysGoesToTheWebhook(t *testing.T) {
	f := loadFilter(t)
	for _, expr := range []string{"$(POD_NAME)", "logs", "$(PIPE)"} {
		for i, k := range podKinds {
			for _, base := range append([]string{`\\.\pipe\`}, bases...) {
				if !f.sends(t, k, k.wrap(mountSpec(base, expr, true, i%places))) {
					t.Errorf("%s with hostPath %q and subPathExpr %q is not sent to the webhook, which cannot know what it expands to", k.gvk.Kind, base, expr)
				}
			}
		}
	}
}

// TestCorpusCoversEverySpellingFamily keeps the corpus honest: each family
// of pipe spellings the prefilter must keep appears in it.
func TestCorpusCoversEverySpellingFamily(t *testing.T) {
	c := loadCorpus(t)
	families := map[string]func(string) bool{
		`\\.\`:              func(s string) bool { return strings.HasPrefix(s, `\\.\`) },
		`\\?\`:              func(s string) bool { return strings.HasPrefix(s, `\\?\`) },
		`\??\`:              func(s string) bool { return strings.HasPrefix(s, `\??\`) },
		`\\localhost\pipe`:  func(s string) bool { return strings.HasPrefix(strings.ToLower(s), `\\localhost\pipe`) },
		"GLOBALROOT":        func(s string) bool { return strings.Contains(strings.ToLower(s), "globalroot") },
		`\Device\NamedPipe`: func(s string) bool { return strings.Contains(strings.ToLower(s), `device\namedpipe`) },
		"/ separators":      func(s string) bool { return strings.HasPrefix(s, "//") },
		"percent":           func(s string) bool { return strings.Contains(s, "%") },
		"non-ASCII":         func(s string) bool { return strings.ContainsAny(s, "ſıİK\uff3c\uff0e") },
		"control":           func(s string) bool { return strings.ContainsAny(s, "\x00\x01\t\x1f\x7f") },
	}
	for name, in := range families {
		n := 0
		for _, p := range c.paths {
			if in(p) && pipepath.Classify(p).Class != pipepath.NotPipe {
				n++
			}
		}
		if n == 0 {
			t.Errorf("the corpus has no protected path of the %s family", name)
		}
	}
}

// spellings are pipe paths, one or more of each family, that reach the
// pipe namespace from a rooted path: the cases the prefilter's guards exist
// for beyond the prefixes the pipepath tests already spell.
var spellings = []string{
	`\\.\pipe\csi-proxy-disk-v1`, `//./PIPE/CSI-PROXY-DISK-V1`, `\\?\pipe\csi-proxy-disk-v1`,
	`\??\pipe\csi-proxy-disk-v1`, `\\localhost\pipe\csi-proxy-disk-v1`, `\\localhost\IPC$`,
	`\\.\GLOBALROOT\Device\NamedPipe\csi-proxy-disk-v1`, `\Device\NamedPipe\csi-proxy-disk-v1`,
	`/Device/Mup/localhost`, `/DosDevices/UNC/localhost`, `/GLOBALROOT/Device`,
	`/Sessions/0/DosDevices/00000000-00000000/pipe/x`, `/x/../Device/Mup/localhost`,
	`\x\..\Device\NamedPipe\csi-proxy-disk-v1`, `/Device./Mup/localhost`, `/Devıce/Mup/localhost`,
	`/device/mup/ſerver`, `/Ｄevice/Mup/localhost`, `/%44evice/Mup/localhost`, `/Device%2fMup/localhost`,
	"\\\\.\\pipe\\csi-proxy-disk-v1\x00", `\\.\ｐipe\csi-proxy-disk-v1`, ` \\.\pipe\csi-proxy-disk-v1`,
}
