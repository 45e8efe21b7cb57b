package system

import (
	"context"
	"errors"
	"strings"
	"testing"
)

// TestForceCannotReachPastTheAllowedServices: stopping an allowed service
// with force would stop the services that depend on it, directly or not;
// when one of them is not allowed, nothing is stopped and the refusal names
// every such service and the flags that would allow them.
func TestForceCannotReachPastTheAllowedServices(t *testing.T) {
	for _, transitive := range []bool{false, true} {
		name := map[bool]string{false: "direct dependents listed", true: "all dependents listed"}[transitive]
		t.Run(name, func(t *testing.T) {
			f := newFakeSCM(running("A"), running("B", "A"), running("Netlogon", "B"), running("D", "A"), stopped("E", "A"))
			f.transitive = transitive
			n := native(f)
			n.MayStop = func(s string) bool { return strings.EqualFold(s, "A") || strings.EqualFold(s, "b") }
			err := n.StopService(context.Background(), "A", true)
			want := `StopService of service "A" with force refused: it would also stop services that depend on it and are not allowed services: ` +
				`"Netlogon", "D"; stop them on the node first, or allow them too (--allowed-service=Netlogon --allowed-service=D) (rule allowed-services)`
			var denied *NotAllowedError
			if !errors.As(err, &denied) || denied.Rule != RuleAllowedServices || err.Error() != want {
				t.Fatalf("err = %v\nwant  %q", err, want)
			}
			if got := f.calls("stop"); got != nil {
				t.Fatalf("a refused stop stopped %q", got)
			}
			// With every dependent allowed, the same call stops them all.
			n.MayStop = func(string) bool { return true }
			if err := n.StopService(context.Background(), "A", true); err != nil {
				t.Fatal(err)
			}
			if st := f.stateOf("Netlogon"); st != stateStopped {
				t.Fatalf("Netlogon is %s", stateName(st))
			}
		})
	}
}

// The walk that checks the dependents before anything is stopped ends on a
// cycle or a chain too deep as the stops do, stopping nothing.
func TestForceCheckEndsOnCyclesAndDepth(t *testing.T) {
	f := newFakeSCM(running("A", "B"), running("B", "A"))
	n := native(f)
	n.MayStop = func(string) bool { return true }
	err := n.StopService(context.Background(), "A", true)
	want := `StopService: services depend on each other in a cycle ("A", "B" -> "A"): the service control manager's database is inconsistent; stop them on the node`
	if err == nil || err.Error() != want {
		t.Fatalf("err = %v\nwant  %q", err, want)
	}
	if got := f.calls("stop"); got != nil {
		t.Fatalf("stopped %q", got)
	}
}
