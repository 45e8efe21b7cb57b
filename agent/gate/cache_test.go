package gate

import (
	"context"
	"fmt"
	"reflect"
	"strings"
	"sync"
	"testing"

	"github.com/go-logr/logr"

	"github.com/pipeguard/pipeguard/agent/identity"
)

// pathPolicy denies Mkdir of a path under /forbidden, and any call whose
// caller's pod name or request field names "evil": a rule whose decision
// depends on the request, on the caller and on the method.
const pathPolicy = `package pipeguard.agent.policy.paths

import rego.v1

deny contains {"rule": "no-forbidden", "msg": sprintf("%s is forbidden", [input.request.path])} if {
	input.method == "Mkdir"
	startswith(input.request.path, "/forbidden")
}

deny contains {"rule": "no-evil", "msg": "evil"} if {
	some v in [input.caller.podName, input.group, input.groupVersion, input.request.path]
	v == "evil"
}
`

// TestDecisionCacheAgreesWithEvaluation: with the cache, every decision
// equals the rules' own on the same input, asked repeatedly, in any order,
// from many goroutines; inputs that differ in one field, or whose fields
// would run together if concatenated, are never confused.
func TestDecisionCacheAgreesWithEvaluation(t *testing.T) {
	ctx := context.Background()
	e, err := New(ctx, Options{Log: logr.Discard(), PolicyDir: policyDir(t, map[string]string{"paths.rego": pathPolicy, "sample.rego": readSample(t)})})
	if err != nil {
		t.Fatal(err)
	}
	if e.current.Load().cache == nil {
		t.Fatal("deterministic policies have no decision cache")
	}
	evil := *csiNode
	evil.PodName = "evil"
	var inputs []*Input
	for _, c := range []*identity.Caller{csiNode, debugPod, hostShell, &evil, nil} {
		for _, p := range []string{"/var/lib/kubelet/x", "/forbidden/x", "evil", ""} {
			for _, gm := range [][2]string{{"filesystem", "Mkdir"}, {"filesystem", "PathExists"}, {"disk", "PartitionDisk"}, {"evil", "Mkdir"}} {
				inputs = append(inputs, &Input{Group: gm[0], Version: "v1", Method: gm[1], FullMethod: "/v1." + gm[0] + "/" + gm[1],
					Mutating: gm[1] != "PathExists", Caller: c, Request: map[string]any{"path": p}})
			}
		}
	}
	// Fields that would run together if the key concatenated them.
	inputs = append(inputs,
		&Input{Group: "ev", Version: "il", Method: "Mkdir", Caller: csiNode},
		&Input{Group: "evil", Version: "", Method: "Mkdir", Caller: csiNode},
		&Input{Group: "", Version: "evil", Method: "Mkdir", Caller: csiNode},
	)
	want := make([]Decision, len(inputs))
	for i, in := range inputs {
		if want[i], err = e.current.Load().decide(ctx, in); err != nil {
			t.Fatal(err)
		}
	}
	var wg sync.WaitGroup
	for w := range 8 {
		wg.Go(func() {
			for round := range 5 {
				for j := range inputs {
					i := (j*7 + w + round*3) % len(inputs)
					got, err := e.Decide(ctx, inputs[i])
					if err != nil {
						t.Error(err)
						return
					}
					if got != want[i] {
						t.Errorf("input %d (%+v, caller %+v): cached decision %+v, the rules decide %+v", i, inputs[i], inputs[i].Caller, got, want[i])
						return
					}
				}
			}
		})
	}
	wg.Wait()
	denied := 0
	for _, d := range want {
		if !d.Allowed {
			denied++
		}
	}
	if denied == 0 || denied == len(want) {
		t.Fatalf("%d of %d inputs denied: the corpus must hold both", denied, len(want))
	}
}

// TestCacheKeyCoversTheInputDocument: changing any field of the input or
// of its caller that changes the document the rules read changes the
// cache key, so no two inputs with different documents share a decision.
func TestCacheKeyCoversTheInputDocument(t *testing.T) {
	base := func() *Input {
		c := *csiNode
		c.Notes = nil
		return &Input{Group: "filesystem", Version: "v1", Method: "Mkdir", FullMethod: "/v1.Filesystem/Mkdir", Mutating: true,
			Caller: &c, Request: map[string]any{"path": "/var/lib/kubelet/x", "n": int64(1)}}
	}
	doc := func(in *Input) string {
		d, err := in.Document()
		if err != nil {
			t.Fatal(err)
		}
		return fmt.Sprint(d)
	}
	key := func(in *Input) string {
		k, ok := in.cacheKey()
		if !ok {
			t.Fatalf("input %+v has no cache key", in)
		}
		return k
	}
	b := base()
	baseDoc, baseKey := doc(b), key(b)
	changed := 0
	try := func(what string, mutate func(*Input)) {
		in := base()
		mutate(in)
		d, k := doc(in), key(in)
		if d != baseDoc && k == baseKey {
			t.Errorf("%s changes the input document but not the cache key", what)
		}
		if d != baseDoc {
			changed++
		}
	}
	for _, f := range []string{"Group", "Version", "Method", "FullMethod"} {
		try(f, func(in *Input) { reflect.ValueOf(in).Elem().FieldByName(f).SetString("x") })
	}
	try("Mutating", func(in *Input) { in.Mutating = false })
	try("Request", func(in *Input) { in.Request["path"] = "/var/lib/kubelet/y" })
	try("Request type", func(in *Input) { in.Request["n"] = "1" })
	try("Request key", func(in *Input) { in.Request["other"] = int64(1) })
	try("no Request", func(in *Input) { in.Request = nil })
	try("no Caller", func(in *Input) { in.Caller = nil })
	ct := reflect.TypeOf(identity.Caller{})
	for i := range ct.NumField() {
		f := ct.Field(i)
		try("Caller."+f.Name, func(in *Input) {
			v := reflect.ValueOf(in.Caller).Elem().Field(i)
			switch v.Kind() {
			case reflect.String:
				v.SetString(v.String() + "x")
			case reflect.Int, reflect.Int64:
				v.SetInt(v.Int() + 1)
			case reflect.Bool:
				v.SetBool(!v.Bool())
			case reflect.Slice:
				v.Set(reflect.ValueOf([]string{"note"}))
			default:
				t.Fatalf("Caller.%s is a %s: teach this test to change it", f.Name, v.Kind())
			}
		})
	}
	// A host caller and an unattributed one differ only in attribution.
	try("host to unattributed", func(in *Input) {
		in.Caller.PodUID, in.Caller.PodMapped, in.Caller.Unattributed = "", true, ""
		host := key(in)
		in.Caller.Unattributed = "cgroup path outside the namespace"
		if key(in) == host {
			t.Errorf("a host caller and an unattributed one share a cache key")
		}
	})
	if changed < 15 {
		t.Fatalf("only %d changes reached the input document: the test does not exercise the key", changed)
	}
}

// TestNondeterministicRulesAreNotCached: a policy that reads the clock,
// directly, through a function, or in a nested call, makes its generation
// evaluate every call; a later generation without it caches again.
func TestNondeterministicRulesAreNotCached(t *testing.T) {
	ctx := context.Background()
	for name, body := range map[string]string{
		"in a body":          `deny contains {"rule": "night", "msg": "m"} if { time.now_ns() < 0 }`,
		"through a function": "hour := h if { h := time.clock([time.now_ns(), \"UTC\"])[0] }\ndeny contains {\"rule\": \"night\", \"msg\": \"m\"} if { hour > 24 }",
		"as an argument":     `deny contains {"rule": "r", "msg": "m"} if { rand.intn("x", 10) > 100 }`,
		"an id":              `deny contains {"rule": "r", "msg": uuid.rfc4122("x")} if { input.method == "none" }`,
	} {
		t.Run(name, func(t *testing.T) {
			src := "package pipeguard.agent.policy.clock\n\nimport rego.v1\n\n" + body + "\n"
			dir := policyDir(t, map[string]string{"clock.rego": src})
			e, err := New(ctx, Options{Log: logr.Discard(), PolicyDir: dir})
			if err != nil {
				t.Fatal(err)
			}
			if e.current.Load().cache != nil {
				t.Fatalf("a policy calling a nondeterministic builtin %s is cached", name)
			}
		})
	}
}

// TestDecisionCacheEndsWithItsGeneration: a decision remembered under one
// generation is not returned once a new policy is in force, and a failed
// evaluation is never remembered.
func TestDecisionCacheEndsWithItsGeneration(t *testing.T) {
	ctx := context.Background()
	dir := policyDir(t, map[string]string{"paths.rego": pathPolicy})
	e, err := New(ctx, Options{Log: logr.Discard(), PolicyDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	in := &Input{Group: "filesystem", Version: "v1", Method: "Mkdir", Caller: csiNode, Request: map[string]any{"path": "/var/lib/kubelet/ok"}}
	for range 2 {
		if d, err := e.Decide(ctx, in); err != nil || !d.Allowed {
			t.Fatalf("before the change: %+v, %v", d, err)
		}
	}
	stricter := strings.Replace(pathPolicy, `startswith(input.request.path, "/forbidden")`, `startswith(input.request.path, "/var/lib/kubelet")`, 1)
	writeFileT(t, dir+"/paths.rego", stricter)
	if ok, err := e.Reload(ctx); !ok || err != nil {
		t.Fatalf("reload: %v, %v", ok, err)
	}
	if d, err := e.Decide(ctx, in); err != nil || d.Allowed || d.Rule != "no-forbidden" {
		t.Fatalf("after the change the remembered allow came back: %+v, %v", d, err)
	}

	// A request the input document cannot hold is evaluated (and its
	// failure reported), never looked up or remembered.
	bad := &Input{Group: "filesystem", Version: "v1", Method: "Mkdir", Caller: csiNode, Request: map[string]any{"f": func() {}}}
	if _, ok := bad.cacheKey(); ok {
		t.Fatal("a request that does not encode has a cache key")
	}
}

func writeFileT(t *testing.T, p, s string) {
	t.Helper()
	if err := writeFile(p, []byte(s)); err != nil {
		t.Fatal(err)
	}
}
