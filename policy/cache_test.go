package policy

import (
	"context"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/open-policy-agent/opa/v1/ast"

	"github.com/pipeguard/pipeguard/policy/v1alpha1"
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
		"namespace name":  {func(in *Input) { in.Namespace.Name = "team-b" }, `namespace "team-b" is not allowed`},
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

	if _, err := e.Load(context.Background(), []v1alpha1.PipeAccessPolicy{DefaultPolicy()}); err != nil {
		t.Fatal(err)
	}
	if d := evaluate(t, e, cacheTestInput("team-a")); d.Cached {
		t.Fatal("a new generation reused a decision of the previous one")
	}
}

// A generation with admin-written rego never caches: its rules may read
// any part of the input, such as the requesting user.
func TestDecisionCacheOffWithAdminRego(t *testing.T) {
	e, err := NewEngine(context.Background(), Options{DecisionCacheSize: 16})
	if err != nil {
		t.Fatal(err)
	}
	p := DefaultPolicy()
	p.Spec.Rego = []v1alpha1.RegoModule{{Name: "user.rego", Source: "package pipeguard.admission.user\n\nviolation contains \"not alice\" if input.request.username != \"alice\"\n"}}
	if _, err := e.Load(context.Background(), []v1alpha1.PipeAccessPolicy{p}); err != nil {
		t.Fatal(err)
	}
	for _, user := range []string{"alice", "bob", "alice"} {
		in := cacheTestInput("team-a")
		in.Namespace.Labels = map[string]string{AllowLabel: "true"}
		in.Request.Username = user
		d := evaluate(t, e, in)
		if d.Cached {
			t.Fatalf("user %s: decision came from the cache", user)
		}
		if got, want := d.Denied(), user != "alice"; got != want {
			t.Fatalf("user %s: denied %v, want %v", user, got, want)
		}
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
