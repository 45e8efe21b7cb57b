package policy

import (
	"reflect"
	"testing"
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
