package policy

import (
	"context"
	"fmt"
	"slices"
	"testing"

	"github.com/open-policy-agent/opa/v1/ast"
	"github.com/open-policy-agent/opa/v1/rego"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/pipeguard/pipeguard/api/v1alpha1"
)

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

violation contains "agents tier" if input.namespace.labels["pipeguard.io/tier"] == "agents"
`}},
		}},
		{ObjectMeta: metav1.ObjectMeta{Name: "by-account"}, Spec: v1alpha1.PipeAccessPolicySpec{
			Pipes: []string{"vendor-agent", "agent-*"}, EnforcementAction: v1alpha1.Warn,
			Allow: v1alpha1.Allowances{Privileged: &falsity, HostProcess: &falsity,
				NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"pipeguard.io/tier": "agents"}},
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
	whole, err := prepare(ctx, "deny := data.pipeguard.admission.deny; warn := data.pipeguard.admission.warn; dryrun := data.pipeguard.admission.dryrun", append(modules, glue))
	if err != nil {
		t.Fatal(err)
	}
	reference := func(in *Input) map[string][]Violation {
		rs, err := whole.Eval(ctx, rego.EvalParsedInput(in.value(gen.policyTerms(in, gen.namespaceMatches(in.Namespace)))), asTerm)
		if err != nil || len(rs) != 1 {
			t.Fatalf("evaluating all the rules at once: %v, %d results", err, len(rs))
		}
		out := map[string][]Violation{}
		for _, set := range []string{"deny", "warn", "dryrun"} {
			if out[set], err = resultViolations(rs, set); err != nil {
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
			for _, labels := range []map[string]string{nil, {"pipeguard.io/tier": "agents"}} {
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
