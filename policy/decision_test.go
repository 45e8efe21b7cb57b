package policy

import (
	"context"
	"reflect"
	"testing"

	"github.com/open-policy-agent/opa/v1/ast"
	"github.com/open-policy-agent/opa/v1/rego"
)

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

// decisionOf reads the rules' violations as rego values and sorts each
// into the set its action names; an action the rules never produce counts
// as deny, and a result that is not a set of violations with messages is
// an error, never an allow.
func TestDecisionOfReadsRegoValues(t *testing.T) {
	eval := func(t *testing.T, value string) (*Decision, error) {
		t.Helper()
		pq, err := rego.New(rego.Query("violation := "+value), rego.SetRegoVersion(ast.RegoV1)).PrepareForEval(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		rs, err := pq.Eval(context.Background(), asTerm)
		if err != nil {
			t.Fatal(err)
		}
		return decisionOf(rs, 7)
	}
	d, err := eval(t, `{
		{"rule": "r", "msg": "no", "action": "deny", "container": "c", "policies": ["p", "q"], "subject": "container \"c\""},
		{"rule": "r", "msg": "careful", "action": "warn", "volume": null},
		{"rule": "r", "msg": "noted", "action": "dryrun", "path": 3},
		{"rule": "r", "msg": "blocked", "action": "block"},
	}`)
	if err != nil {
		t.Fatal(err)
	}
	wantDeny := []Violation{
		{Rule: "r", Message: "blocked", Action: Deny},
		{Rule: "r", Message: "no", Action: Deny, Container: "c", Policies: []string{"p", "q"}, Subject: `container "c"`},
	}
	if !reflect.DeepEqual(d.Deny, wantDeny) {
		t.Errorf("deny = %+v, want %+v", d.Deny, wantDeny)
	}
	if want := []Violation{{Rule: "r", Message: "careful", Action: Warn}}; !reflect.DeepEqual(d.Warn, want) {
		t.Errorf("warn = %+v, want %+v", d.Warn, want)
	}
	if want := []Violation{{Rule: "r", Message: "noted", Action: DryRun, Path: "3"}}; !reflect.DeepEqual(d.DryRun, want) {
		t.Errorf("dryrun = %+v, want %+v", d.DryRun, want)
	}
	if d.Generation != 7 || !d.Evaluated {
		t.Errorf("generation %d, evaluated %v; want 7, true", d.Generation, d.Evaluated)
	}
	for value, want := range map[string]string{
		`{{"rule": "r", "action": "deny"}}`:            "policy generation 7: reading violation: a violation has no message",
		`{{"rule": "r", "msg": "", "action": "deny"}}`: "policy generation 7: reading violation: a violation has no message",
		`[{"msg": "m"}]`:    "policy generation 7: reading violation: result is of type array, want a set",
		`{"not an object"}`: "policy generation 7: reading violation: violation is of type string, want an object",
	} {
		if d, err := eval(t, value); err == nil || err.Error() != want {
			t.Errorf("%s: decision %+v, error %v; want %q", value, d, err, want)
		}
	}
	if d, err := decisionOf(nil, 7); err == nil || err.Error() != "policy generation 7: got 0 results, want 1" {
		t.Errorf("no results: decision %+v, error %v", d, err)
	}
}
