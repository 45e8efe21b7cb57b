package policy

import (
	"context"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/open-policy-agent/opa/v1/ast"
	"github.com/open-policy-agent/opa/v1/rego"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/pipeguard/pipeguard/api/v1alpha1"
	shipped "github.com/pipeguard/pipeguard/rego"
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
		"privileged":      {func(in *Input) { in.Mounts[0].Privileged = true }, ""},
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
				NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"tier": "agents"}},
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
			in.Namespace.Labels = map[string]string{"tier": "agents"}
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
			evaluate(t, cached, input("first"))
			// "second" shares the facts of "first"; PipeAccessPolicy
			// by-name allows "vendors" by name.
			for _, ns := range []string{"second", "vendors"} {
				got, want := evaluate(t, cached, input(ns)), evaluate(t, uncached, input(ns))
				got.Cached = false
				if !reflect.DeepEqual(got, want) {
					t.Errorf("namespace %s: from the cache\n%+v\nevaluated\n%+v", ns, got, want)
				}
				if ns == "second" && len(want.Deny)+len(want.Warn)+len(want.DryRun) == 0 {
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

// adminPolicies are the policies of TestAdminRulesBesideTheCache: shipped
// rules under three enforcement actions, and admin rules that read what
// the decision key leaves out (the user, the namespace's labels) and report
// objects, strings and a mistaken number.
func adminPolicies() []v1alpha1.PipeAccessPolicy {
	truth, falsity := true, false
	return []v1alpha1.PipeAccessPolicy{csiProxyPolicy(),
		{ObjectMeta: metav1.ObjectMeta{Name: "by-name"}, Spec: v1alpha1.PipeAccessPolicySpec{
			Pipes: []string{"vendor-*"}, EnforcementAction: v1alpha1.Deny,
			Allow: v1alpha1.Allowances{Privileged: &truth, HostProcess: &falsity, Namespaces: []string{"vendors"}},
			Rego: []v1alpha1.RegoModule{{Name: "user.rego", Source: `package pipeguard.admission.byname

violation contains {"rule": "no-bob", "msg": sprintf("user %s may not create pods in %s", [input.request.username, input.namespace.name])} if {
	input.request.username == "bob"
}

violation contains "agents tier" if input.namespace.labels.tier == "agents"
`}},
		}},
		{ObjectMeta: metav1.ObjectMeta{Name: "by-account"}, Spec: v1alpha1.PipeAccessPolicySpec{
			Pipes: []string{"vendor-agent", "agent-*"}, EnforcementAction: v1alpha1.Warn,
			Allow: v1alpha1.Allowances{Privileged: &falsity, HostProcess: &falsity,
				NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"tier": "agents"}},
				ServiceAccounts:   []string{"agent"}},
			Rego: []v1alpha1.RegoModule{{Name: "warn.rego", Source: `package pipeguard.admission.byaccount

violation contains {"msg": "bob is being watched", "container": "c"} if input.request.username == "bob"
`}},
		}},
		{ObjectMeta: metav1.ObjectMeta{Name: "watch-only"}, Spec: v1alpha1.PipeAccessPolicySpec{
			Pipes: []string{"audit-*"}, EnforcementAction: v1alpha1.DryRun,
			Allow: v1alpha1.Allowances{Privileged: &falsity, HostProcess: &falsity},
			Rego: []v1alpha1.RegoModule{{Name: "odd.rego", Source: `package pipeguard.admission.watchonly

violation contains 42 if {
	some m in input.mounts
	m.pipe == "audit-1"
}
`}},
		}},
	}
}

// In a generation with admin-written rules the shipped rules' decision
// comes from the cache and the admin rules run on every review. Together
// they decide exactly as all the rules evaluated at once would: for
// several users, namespaces and mounts, the engine's decision, with the
// cache and without, holds the same violations as the deny, warn and
// dryrun sets of one query over the shipped rules, the admin modules and
// the generated module that joins them.
func TestAdminRulesBesideTheCache(t *testing.T) {
	ctx := context.Background()
	policies := adminPolicies()
	load := func(size int) *Engine {
		e, err := NewEngine(ctx, Options{DecisionCacheSize: size})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := e.Load(ctx, policies); err != nil {
			t.Fatal(err)
		}
		return e
	}
	cached, uncached := load(64), load(0)
	gen := cached.Current()

	// The whole set of rules in one query.
	var modules []*ast.Module
	var packages []adminPackage
	for i := range policies {
		cp, ms, err := compilePolicy(&policies[i])
		if err != nil {
			t.Fatal(err)
		}
		modules = append(modules, ms...)
		packages = append(packages, cp.packages(ms)...)
	}
	glue, err := glueModule(packages)
	if err != nil {
		t.Fatal(err)
	}
	whole, err := prepare(ctx, decisionQuery, append(modules, glue))
	if err != nil {
		t.Fatal(err)
	}
	reference := func(in *Input) map[string][]Violation {
		rs, err := whole.Eval(ctx, rego.EvalParsedInput(in.value(gen.policyTerms(in, gen.namespaceMatches(in.Namespace)))))
		if err != nil || len(rs) != 1 {
			t.Fatalf("evaluating all the rules at once: %v, %d results", err, len(rs))
		}
		out := map[string][]Violation{}
		for _, set := range []string{"deny", "warn", "dryrun"} {
			if out[set], err = violations(rs[0].Bindings[set]); err != nil {
				t.Fatal(err)
			}
		}
		return out
	}
	sets := func(d *Decision) map[string][]Violation {
		return map[string][]Violation{"deny": d.Deny, "warn": d.Warn, "dryrun": d.DryRun}
	}
	sorted := func(vs []Violation) []string {
		out := make([]string, len(vs))
		for i, v := range vs {
			out[i] = fmt.Sprintf("%+v", v)
		}
		slices.Sort(out)
		return out
	}

	mount := func(pipe string) Mount {
		return Mount{Container: "c", ContainerKind: KindContainer, Volume: "v", VolumeSource: "hostPath",
			RawPath: `\\.\pipe\` + pipe, Path: `\\.\pipe\` + pipe, PathClass: "pipe", Pipe: pipe}
	}
	mounts := map[string][]Mount{
		"every policy": {mount("csi-proxy-disk-v1"), mount("vendor-agent"), mount("vendor-x"), mount("agent-1"), mount("audit-1")},
		"vendor agent": {mount("vendor-agent")},
		"no pipe":      {{Container: "c", ContainerKind: KindContainer, Volume: "logs", VolumeSource: "hostPath", RawPath: `C:\logs`, Path: `C:\logs`, PathClass: "other"}},
	}
	seen := map[string]bool{}
	for name, ms := range mounts {
		for _, ns := range []string{"first", "second", "vendors"} {
			for _, labels := range []map[string]string{nil, {"tier": "agents"}} {
				for _, user := range []string{"alice", "bob"} {
					in := cacheTestInput(ns)
					in.Namespace.Labels = labels
					in.Request.Username = user
					in.Mounts = ms
					want := reference(in)
					for engine, e := range map[string]*Engine{"cached": cached, "uncached": uncached} {
						d := evaluate(t, e, in)
						if d.Cached || !d.Evaluated {
							t.Errorf("%s, %s, %v, %s, %s engine: cached %v, evaluated %v; admin rules must run on every review", name, ns, labels, user, engine, d.Cached, d.Evaluated)
						}
						for set, got := range sets(d) {
							if g, w := sorted(got), sorted(want[set]); !slices.Equal(g, w) {
								t.Errorf("%s, %s, %v, %s, %s engine, %s:\n got %q\nwant %q", name, ns, labels, user, engine, set, g, w)
							}
							for _, v := range got {
								seen[set+" "+v.Rule] = true
							}
						}
					}
				}
			}
		}
	}
	// The cases above must have reached every kind of violation.
	for _, v := range []string{"deny protected-pipe-mount", "warn protected-pipe-mount", "dryrun protected-pipe-mount",
		"deny no-bob", "deny by-name", "warn by-account", "dryrun watch-only"} {
		if !seen[v] {
			t.Errorf("no %s violation was compared", v)
		}
	}
}

// The shipped rules' part of a decision in a generation with admin rules is
// served by the cache: a decision planted there for the facts reaches the
// answer, beside what the admin rules say on this review.
func TestAdminRulesUseTheShippedRulesCache(t *testing.T) {
	ctx := context.Background()
	e, err := NewEngine(ctx, Options{DecisionCacheSize: 16})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.Load(ctx, adminPolicies()); err != nil {
		t.Fatal(err)
	}
	gen := e.Current()
	if gen.cache == nil {
		t.Fatal("a generation with admin rules has no cache for the shipped rules' decisions")
	}
	in := cacheTestInput("team-a")
	in.Request.Username = "alice"
	first := evaluate(t, e, in)
	if !first.Denied() {
		t.Fatalf("first review: %+v; want the shipped rules to deny", first)
	}
	if n := len(gen.cache.new) + len(gen.cache.old); n != 1 {
		t.Fatalf("cache holds %d decisions after one review, want 1", n)
	}
	planted := Violation{Rule: "planted", Message: "from the cache", Action: "deny"}
	for k := range gen.cache.new {
		gen.cache.new[k] = &Decision{Generation: gen.Number, Evaluated: true, Deny: []Violation{planted}}
	}
	in = cacheTestInput("team-b")
	in.Request.Username = "bob"
	got := Messages(evaluate(t, e, in).Deny)
	want := []string{"[no-bob] user bob may not create pods in team-b", "[planted] from the cache"}
	if !slices.Equal(got, want) {
		t.Errorf("second review denied with %q, want %q", got, want)
	}
}

// Decision.with adds admin violations to the set of their action, once,
// and leaves the decision it started from, which the cache shares, as it
// was.
func TestDecisionWithAdminViolations(t *testing.T) {
	shippedDeny := Violation{Rule: "protected-pipe-mount", Message: "m", Action: "deny", Policies: []string{"p"}}
	d := &Decision{Generation: 3, Evaluated: true, Cached: true, Deny: make([]Violation, 1, 4)}
	d.Deny[0] = shippedDeny
	same := shippedDeny
	same.Policies = []string{"p"}
	warn := Violation{Rule: "w", Message: "watch", Action: "warn"}
	dry := Violation{Rule: "d", Message: "dry", Action: "dryrun"}
	other := Violation{Rule: "r", Message: "m", Action: "deny"}
	got := d.with([]Violation{same, warn, dry, other})
	if want := []Violation{shippedDeny, other}; !reflect.DeepEqual(got.Deny, want) {
		t.Errorf("deny = %+v, want %+v", got.Deny, want)
	}
	if !reflect.DeepEqual(got.Warn, []Violation{warn}) || !reflect.DeepEqual(got.DryRun, []Violation{dry}) {
		t.Errorf("warn = %+v, dryrun = %+v; want one each", got.Warn, got.DryRun)
	}
	if got.Cached || !got.Evaluated || got.Generation != 3 {
		t.Errorf("cached %v, evaluated %v, generation %d; want false, true, 3", got.Cached, got.Evaluated, got.Generation)
	}
	if len(d.Deny) != 1 || !reflect.DeepEqual(d.Deny[:2][1], Violation{}) || !d.Cached {
		t.Errorf("the original decision changed: %+v, backing array %+v", d, d.Deny[:2])
	}
}

func TestDecisionCacheEvictsOldest(t *testing.T) {
	c := newDecisionCache(4) // two halves of two
	put := func(keys ...string) {
		for _, k := range keys {
			c.put([]byte(k), &Decision{})
		}
	}
	present := func(want string, keys ...string) {
		t.Helper()
		for _, k := range keys {
			if _, ok := c.get([]byte(k)); ok != (want == "present") {
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

// TestDecisionKeyCoversWhatTheRulesRead keeps decisionKey and
// shippedValue in step with the shipped admission rules: every part of the
// input they read must be in the key, or two inputs that differ there would
// share a decision, and in the input of generations without admin rules.
func TestDecisionKeyCoversWhatTheRulesRead(t *testing.T) {
	// What decisionKey and shippedValue hold (policies are the
	// generation's own).
	inKey := []string{"mounts", "namespace.name", "pod.serviceAccountName", "pod.hostProcess", "policies"}
	var read []string
	for _, f := range shipped.Admission() {
		m, err := ast.ParseModuleWithOpts(f.Name, f.Source, ast.ParserOptions{RegoVersion: ast.RegoV1})
		if err != nil {
			t.Fatal(err)
		}
		ast.WalkTerms(m, func(term *ast.Term) bool {
			switch v := term.Value.(type) {
			case ast.Ref:
				if v[0].Equal(ast.InputRootDocument) {
					read = append(read, inputPath(v[1:]))
					return true // the rest of the ref is not a bare use of input
				}
			case ast.Call:
				// object.get(input, ["a", "b"], default)
				if v[0].Value.Compare(ast.MustParseRef("object.get")) == 0 && v[1].Value.Compare(ast.InputRootRef) == 0 {
					if arr, ok := v[2].Value.(*ast.Array); ok {
						var path ast.Ref
						arr.Foreach(func(el *ast.Term) { path = append(path, el) })
						read = append(read, inputPath(path))
						return true
					}
				}
			case ast.Var:
				if term.Equal(ast.InputRootDocument) {
					read = append(read, "input")
				}
			}
			return false
		})
	}
	if len(read) == 0 {
		t.Fatal("found no use of input in the shipped rules")
	}
	for _, r := range read {
		covered := slices.ContainsFunc(inKey, func(k string) bool { return r == k || strings.HasPrefix(r, k+".") })
		if !covered {
			t.Errorf("the shipped rules read input.%s, which decisionKey does not hold; add it to the key", r)
		}
	}
}

// inputPath renders a path below input such as ["pod", "serviceAccountName"]
// as "pod.serviceAccountName", up to its first non-string element.
func inputPath(path ast.Ref) string {
	var parts []string
	for _, el := range path {
		s, ok := el.Value.(ast.String)
		if !ok {
			break
		}
		parts = append(parts, string(s))
	}
	if len(parts) == 0 {
		return "input"
	}
	return strings.Join(parts, ".")
}

// TestNamespaceNameOnlyInMessages keeps the placeholder sound: the shipped
// rules may read the namespace's name only in namespace_name, and may use
// namespace_name only as an argument of sprintf printed with %q, %s or %v,
// which print a DNS label as it is. Used anywhere else (compared, matched,
// or changed before printing), the name could change a decision or print
// in a form the renaming cannot find.
func TestNamespaceNameOnlyInMessages(t *testing.T) {
	nameRef := ast.MustParseRef("input.namespace.name")
	objectGet, sprintf := ast.MustParseRef("object.get"), ast.Ref{ast.VarTerm("sprintf")}
	isNameVar := func(term *ast.Term) bool {
		switch v := term.Value.(type) {
		case ast.Var:
			return v == "namespace_name"
		case ast.Ref:
			return len(v) == 1 && v[0].Equal(ast.VarTerm("namespace_name"))
		}
		return false
	}
	uses, printed := 0, 0
	for _, f := range shipped.Admission() {
		m, err := ast.ParseModuleWithOpts(f.Name, f.Source, ast.ParserOptions{RegoVersion: ast.RegoV1})
		if err != nil {
			t.Fatal(err)
		}
		for _, rule := range m.Rules {
			head := rule.Head.Name.String()
			if len(rule.Head.Reference) > 0 {
				head = rule.Head.Reference.String()
			}
			for r := rule; r != nil; r = r.Else {
				var parts []any
				parts = append(parts, r.Body)
				if r.Head.Value != nil {
					parts = append(parts, r.Head.Value)
				}
				if r.Head.Key != nil {
					parts = append(parts, r.Head.Key)
				}
				for _, a := range r.Head.Args {
					parts = append(parts, a)
				}
				for _, part := range parts {
					ast.WalkTerms(part, func(term *ast.Term) bool {
						if ref, ok := term.Value.(ast.Ref); ok && ref.HasPrefix(nameRef) && head != "namespace_name" {
							t.Errorf("%s: rule %s reads input.namespace.name; read it only through namespace_name", term.Location, head)
						}
						if call, ok := term.Value.(ast.Call); ok && call[0].Value.Compare(objectGet) == 0 &&
							call[1].Value.Compare(ast.InputRootRef) == 0 && inputPath(refOf(call[2])) == "namespace.name" && head != "namespace_name" {
							t.Errorf("%s: rule %s reads input.namespace.name; read it only through namespace_name", term.Location, head)
						}
						if isNameVar(term) {
							uses++
						}
						if call, ok := term.Value.(ast.Call); ok && call[0].Value.Compare(sprintf) == 0 && len(call) == 3 {
							format, fok := call[1].Value.(ast.String)
							args, aok := call[2].Value.(*ast.Array)
							if !fok || !aok {
								return false
							}
							verbs := sprintfVerbs(string(format))
							for i := range args.Len() {
								if isNameVar(args.Elem(i)) && i < len(verbs) && strings.ContainsRune("qsv", verbs[i]) {
									printed++
								}
							}
						}
						return false
					})
				}
			}
		}
	}
	if uses == 0 {
		t.Fatal("found no use of namespace_name; if the rules no longer name the namespace, drop this test and the placeholder")
	}
	if uses != printed {
		t.Errorf("namespace_name is used %d times, only %d of them as a sprintf argument printed with %%q, %%s or %%v", uses, printed)
	}
}

// refOf turns an array term such as ["namespace", "name"] into a path.
func refOf(term *ast.Term) ast.Ref {
	arr, ok := term.Value.(*ast.Array)
	if !ok {
		return nil
	}
	var path ast.Ref
	arr.Foreach(func(el *ast.Term) { path = append(path, el) })
	return path
}

// sprintfVerbs lists the verb of each argument a format string consumes.
func sprintfVerbs(format string) []rune {
	var verbs []rune
	for i := 0; i < len(format); i++ {
		if format[i] != '%' {
			continue
		}
		i++
		for i < len(format) && strings.IndexByte("+-# 0123456789.", format[i]) >= 0 {
			i++
		}
		if i < len(format) && format[i] != '%' {
			verbs = append(verbs, rune(format[i]))
		}
	}
	return verbs
}

func TestIsDNSLabel(t *testing.T) {
	for _, s := range []string{"", "a", "team-a", "a-", "-a", "a--b", "A", "team_a", "0", "ns-00042", "é", "a.b",
		strings.Repeat("a", 63), strings.Repeat("a", 64), "pipeguard-namespace-0123456789abcdef01234567"} {
		if got, want := isDNSLabel(s), len(validation.IsDNS1123Label(s)) == 0; got != want {
			t.Errorf("isDNSLabel(%q) = %v, validation.IsDNS1123Label says %v", s, got, want)
		}
	}
	g := &Generation{placeholder: newPlaceholder()}
	if !isDNSLabel(g.placeholder) {
		t.Errorf("placeholder %q is not a DNS label, so sprintf may print it otherwise than a namespace name", g.placeholder)
	}
}

// csiProxyPolicy is a PipeAccessPolicy with the built-in default's spec:
// it covers every csi-proxy pipe, so the default itself steps aside.
func csiProxyPolicy() v1alpha1.PipeAccessPolicy {
	p := DefaultPolicy()
	p.Name = "csi-proxy"
	return p
}
