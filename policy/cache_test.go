package policy

import (
	"context"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/pipeguard/pipeguard/api/v1alpha1"
)

func cacheTestInput(ns string) *Input {
	return &Input{
		Namespace: &Namespace{Name: ns},
		Pod:       &Pod{ServiceAccountName: "default"},
		Mounts: []Mount{{
			Container: "driver", ContainerKind: KindContainer, Volume: "pipe", VolumeSource: "hostPath",
			RawPath: `\\.\pipe\csi-proxy-disk-v1`, Path: `\\.\pipe\csi-proxy-disk-v1`, PathClass: "pipe", Pipe: "csi-proxy-disk-v1",
		}},
	}
}

func evaluate(t *testing.T, e *Engine, in *Input) *Decision {
	t.Helper()
	d, err := e.Evaluate(context.Background(), in)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// csiProxyPolicy is a PipeAccessPolicy with the built-in default's spec:
// it covers every csi-proxy pipe, so the default itself steps aside.
func csiProxyPolicy() v1alpha1.PipeAccessPolicy {
	p := DefaultPolicy()
	p.Name = "csi-proxy"
	return p
}

// A decision is remembered for the same facts, and any fact the rules
// read that differs, or a new generation, leads to a fresh evaluation
// whose message names the new facts.
func TestDecisionCache(t *testing.T) {
	e, err := NewEngine(context.Background(), Options{DecisionCacheSize: 16})
	if err != nil {
		t.Fatal(err)
	}
	first := evaluate(t, e, cacheTestInput("team-a"))
	if first.Cached || !first.Denied() {
		t.Fatalf("first evaluation: cached %v, denied %v; want a fresh denial", first.Cached, first.Denied())
	}
	again := evaluate(t, e, cacheTestInput("team-a"))
	if !again.Cached {
		t.Fatal("the same facts were evaluated again, want the remembered decision")
	}
	if !reflect.DeepEqual(again.Deny, first.Deny) {
		t.Fatalf("remembered decision %+v differs from the evaluated one %+v", again.Deny, first.Deny)
	}

	changes := map[string]struct {
		change func(*Input)
		want   string // in the deny message; empty: allowed
	}{
		"namespace match": {func(in *Input) { in.Namespace.Labels = map[string]string{AllowLabel: "true"} }, ""},
		"container name":  {func(in *Input) { in.Mounts[0].Container = "other" }, `container "other" mounts`},
		"volume name":     {func(in *Input) { in.Mounts[0].Volume = "p2" }, `through volume "p2"`},
		"privileged":      {func(in *Input) { in.Mounts[0].Privileged = true }, "securityContext.privileged has no effect on Windows"},
		"host process":    {func(in *Input) { in.Mounts[0].HostProcess = true }, ""},
		"pipe":            {func(in *Input) { in.Mounts[0].Pipe = "not-protected" }, ""},
		"path": {func(in *Input) {
			in.Mounts[0].Path, in.Mounts[0].Pipe = `\\.\pipe\csi-proxy-smb-v1`, "csi-proxy-smb-v1"
		}, `mounts \\.\pipe\csi-proxy-smb-v1 through`},
		"a second mount": {func(in *Input) {
			m := in.Mounts[0]
			m.Container = "second"
			in.Mounts = append(in.Mounts, m)
		}, `container "second"`},
		"a length-prefix shift": {func(in *Input) {
			in.Mounts[0].Container, in.Mounts[0].ContainerKind = "drivercontainer", ""
		}, `container "drivercontainer"`},
	}
	for name, c := range changes {
		t.Run(name, func(t *testing.T) {
			in := cacheTestInput("team-a")
			c.change(in)
			d := evaluate(t, e, in)
			if d.Cached {
				t.Fatal("a decision for other facts was reused")
			}
			msgs := strings.Join(Messages(d.Deny), "\n")
			if c.want == "" && d.Denied() {
				t.Fatalf("denied: %s", msgs)
			}
			if c.want != "" && !strings.Contains(msgs, c.want) {
				t.Fatalf("deny messages %q do not contain %q", msgs, c.want)
			}
		})
	}

	if _, err := e.Load(context.Background(), []v1alpha1.PipeAccessPolicy{csiProxyPolicy()}); err != nil {
		t.Fatal(err)
	}
	if d := evaluate(t, e, cacheTestInput("team-a")); d.Cached {
		t.Fatal("a new generation reused a decision of the previous one")
	}
}

// Pods of one template in many namespaces share a decision: the second
// namespace gets the first one's decision with its own name in the
// messages, exactly what evaluating its facts afresh gives.
func TestDecisionCacheAcrossNamespaces(t *testing.T) {
	cached, err := NewEngine(context.Background(), Options{DecisionCacheSize: 16})
	if err != nil {
		t.Fatal(err)
	}
	uncached, err := NewEngine(context.Background(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	if first := evaluate(t, cached, cacheTestInput("team-a")); first.Cached {
		t.Fatal("the first evaluation came from the cache")
	}
	for _, ns := range []string{"team-b", "team-a", "x"} {
		got := evaluate(t, cached, cacheTestInput(ns))
		if !got.Cached {
			t.Errorf("namespace %s: evaluated again, want the decision of team-a", ns)
		}
		msgs := strings.Join(Messages(got.Deny), "\n")
		if want := `namespace "` + ns + `" is not allowed`; !strings.Contains(msgs, want) {
			t.Errorf("namespace %s: deny messages %q do not contain %q", ns, msgs, want)
		}
		want := evaluate(t, uncached, cacheTestInput(ns))
		if !reflect.DeepEqual(got.Deny, want.Deny) {
			t.Errorf("namespace %s: decision from the cache\n%+v\ndiffers from a fresh evaluation\n%+v", ns, got.Deny, want.Deny)
		}
	}

	// A name the API server would refuse is shown to the rules as it is,
	// and so is keyed by itself.
	odd := evaluate(t, cached, cacheTestInput("Team_C"))
	if odd.Cached {
		t.Error("a namespace name that is no DNS label was given another namespace's decision")
	}
	if msgs := strings.Join(Messages(odd.Deny), "\n"); !strings.Contains(msgs, `namespace "Team_C" is not allowed`) {
		t.Errorf("deny messages %q do not name namespace Team_C", msgs)
	}
}

// The placeholder must never reach a user, and a namespace allowance must
// still be decided by the real namespace: every shape of message the
// shipped rules write, under several policies, is the same from the cache
// (decided for one namespace, renamed for another) as evaluated afresh.
func TestPlaceholderDecisionsMatchNamed(t *testing.T) {
	truth, falsity := true, false
	policies := []v1alpha1.PipeAccessPolicy{csiProxyPolicy(),
		{ObjectMeta: metav1.ObjectMeta{Name: "by-name"}, Spec: v1alpha1.PipeAccessPolicySpec{
			Pipes: []string{"vendor-*"}, EnforcementAction: v1alpha1.Deny,
			Allow: v1alpha1.Allowances{Privileged: &truth, HostProcess: &falsity, Namespaces: []string{"vendors"}},
		}},
		{ObjectMeta: metav1.ObjectMeta{Name: "by-account"}, Spec: v1alpha1.PipeAccessPolicySpec{
			Pipes: []string{"vendor-agent"}, EnforcementAction: v1alpha1.Warn,
			Allow: v1alpha1.Allowances{Privileged: &falsity, HostProcess: &falsity,
				NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"pipeguard.io/tier": "agents"}},
				ServiceAccounts:   []string{"agent"}},
		}},
		{ObjectMeta: metav1.ObjectMeta{Name: "watch-only"}, Spec: v1alpha1.PipeAccessPolicySpec{
			Pipes: []string{"audit-*"}, EnforcementAction: v1alpha1.DryRun,
			Allow: v1alpha1.Allowances{Privileged: &falsity, HostProcess: &falsity},
		}},
	}
	load := func(size int) *Engine {
		e, err := NewEngine(context.Background(), Options{DecisionCacheSize: size})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := e.Load(context.Background(), policies); err != nil {
			t.Fatal(err)
		}
		return e
	}
	cached, uncached := load(64), load(0)
	mount := func(pipe string) Mount {
		return Mount{Container: "c", ContainerKind: KindInitContainer, Volume: "v", VolumeSource: "hostPath",
			RawPath: `\\.\pipe\` + pipe, Path: `\\.\pipe\` + pipe, PathClass: "pipe", Pipe: pipe}
	}
	ambiguous := Mount{Container: "c", ContainerKind: KindContainer, Volume: "odd", VolumeSource: "hostPath",
		RawPath: `\\?\pipe\x`, PathClass: "ambiguous", AmbiguousReason: "a device path prefix"}
	pv := mount("csi-proxy-disk-v1")
	pv.Container, pv.ContainerKind = "", KindPersistentVolume
	inputs := map[string]func(ns string) *Input{
		"every policy": func(ns string) *Input {
			in := cacheTestInput(ns)
			in.Mounts = []Mount{mount("csi-proxy-disk-v1"), mount("vendor-agent"), mount("vendor-x"), mount("audit-1"), ambiguous}
			return in
		},
		"ServiceAccount narrowed": func(ns string) *Input {
			in := cacheTestInput(ns)
			in.Namespace.Labels = map[string]string{"pipeguard.io/tier": "agents"}
			in.Mounts = []Mount{mount("vendor-agent")}
			return in
		},
		"PersistentVolume": func(ns string) *Input {
			in := cacheTestInput(ns)
			in.Mounts = []Mount{pv}
			return in
		},
	}
	for name, input := range inputs {
		t.Run(name, func(t *testing.T) {
			// PipeAccessPolicy by-name allows "vendors" by name, and
			// "vendors" is decided first: "second", whose facts differ
			// from them only in that, must not get its allowance.
			// "third" shares the facts of "second".
			evaluate(t, cached, input("vendors"))
			for _, ns := range []string{"second", "vendors", "third"} {
				got, want := evaluate(t, cached, input(ns)), evaluate(t, uncached, input(ns))
				got.Cached = false
				if !reflect.DeepEqual(got, want) {
					t.Errorf("namespace %s: from the cache\n%+v\nevaluated\n%+v", ns, got, want)
				}
				if ns != "vendors" && len(want.Deny)+len(want.Warn)+len(want.DryRun) == 0 {
					t.Errorf("namespace %s: no violation, so no message was compared", ns)
				}
				for _, v := range slices.Concat(got.Deny, got.Warn, got.DryRun) {
					if strings.Contains(fmt.Sprint(v), "pipeguard-namespace-") {
						t.Errorf("namespace %s: the placeholder reached a violation: %+v", ns, v)
					}
				}
			}
		})
	}
}

func TestDecisionCacheEvictsOldest(t *testing.T) {
	c := newDecisionCache(4) // two halves of two
	// Each key stands for the facts of a pod running as that ServiceAccount.
	input := func(k string) *Input {
		in := cacheTestInput("team-a")
		in.Pod.ServiceAccountName = k
		return in
	}
	put := func(keys ...string) {
		t.Helper()
		for _, k := range keys {
			d, slot := c.lookup(input(k), nil)
			if d != nil || slot.key == "" {
				t.Fatalf("entry %s: lookup before store gave %+v, slot key %q; want no decision and a key", k, d, slot.key)
			}
			c.store(slot, &Decision{})
		}
	}
	present := func(want string, keys ...string) {
		t.Helper()
		for _, k := range keys {
			d, _ := c.lookup(input(k), nil)
			if ok := d != nil; ok != (want == "present") {
				t.Errorf("entry %s present %v, want %s", k, ok, want)
			}
		}
	}
	put("0", "1", "2", "3", "4", "5")
	present("absent", "0", "1")
	present("present", "4", "5", "2") // 2 is used, so it moves to the newer half
	put("6", "7")
	present("absent", "3", "4", "5")
	present("present", "2", "6", "7")
	if n := len(c.new) + len(c.old); n > 4 {
		t.Errorf("cache holds %d entries, want at most 4", n)
	}
}

func TestIsDNSLabel(t *testing.T) {
	for _, s := range []string{"", "a", "team-a", "a-", "-a", "a--b", "A", "team_a", "0", "ns-00042", "é", "a.b",
		strings.Repeat("a", 63), strings.Repeat("a", 64), "pipeguard-namespace-0123456789abcdef01234567"} {
		if got, want := isDNSLabel(s), len(validation.IsDNS1123Label(s)) == 0; got != want {
			t.Errorf("isDNSLabel(%q) = %v, validation.IsDNS1123Label says %v", s, got, want)
		}
	}
	if p := newPlaceholder(); !isDNSLabel(p) {
		t.Errorf("placeholder %q is not a DNS label, so sprintf may print it otherwise than a namespace name", p)
	}
}
