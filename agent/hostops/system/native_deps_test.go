package system

import (
	"context"
	"errors"
	"strings"
	"testing"
)

func onlyAllowed(names ...string) func(string) bool {
	return func(s string) bool {
		for _, n := range names {
			if strings.EqualFold(n, s) {
				return true
			}
		}
		return false
	}
}

// TestStartCannotReachPastTheAllowedServices: the service control manager
// starts what a service depends on before it; an allowed service whose
// stopped dependencies, direct or not, are not allowed is refused before
// anything starts, and the refusal names each of them.
func TestStartCannotReachPastTheAllowedServices(t *testing.T) {
	f := newFakeSCM(stopped("csi", "B", "Running"), stopped("B", "C"), stopped("C"), running("Running", "Deep"), stopped("Deep"))
	n := native(f)
	n.MayStart = onlyAllowed("csi")
	err := n.StartService(context.Background(), "csi")
	want := `StartService of service "csi" refused: it would also start services it depends on that are not running and are not allowed services: "B", "C"; ` +
		`start them on the node first, or allow them too (--allowed-service=B --allowed-service=C) (rule allowed-services)`
	var denied *NotAllowedError
	if !errors.As(err, &denied) || denied.Rule != RuleAllowedServices || err.Error() != want {
		t.Fatalf("err = %v\nwant  %q", err, want)
	}
	if got := f.calls("start"); got != nil {
		t.Fatalf("a refused start started %q", got)
	}
	// A running dependency is not started again, so neither it nor what
	// it depends on needs to be allowed.
	n.MayStart = onlyAllowed("csi", "b", "C")
	if err := n.StartService(context.Background(), "csi"); err != nil {
		t.Fatal(err)
	}
	if got := f.calls("start"); len(got) != 1 || got[0] != "start csi" {
		t.Fatalf("started %q, want csi alone (the fake starts no dependency)", got)
	}
}

// TestStartRefusesGroupDependencies: a dependency on a load-order group
// may start services the agent cannot name ahead; it is refused.
func TestStartRefusesGroupDependencies(t *testing.T) {
	f := newFakeSCM(stopped("csi", "B"), stopped("B", "+NetworkProvider"))
	n := native(f)
	n.MayStart = onlyAllowed("csi", "B")
	err := n.StartService(context.Background(), "csi")
	want := `StartService of service "csi" refused: service "B" depends on the load-order group "NetworkProvider", whose services a start may start too and the agent cannot check against the allowed services; start it on the node (rule allowed-services)`
	if err == nil || err.Error() != want {
		t.Fatalf("err = %v\nwant  %q", err, want)
	}
	if got := f.calls("start"); got != nil {
		t.Fatalf("started %q", got)
	}
}

// TestStartDependencyCycleEnds: a broken database with dependencies in a
// cycle ends the check instead of holding the call to its deadline.
func TestStartDependencyCycleEnds(t *testing.T) {
	f := newFakeSCM(stopped("A", "B"), stopped("B", "A"))
	n := native(f)
	n.MayStart = onlyAllowed("A", "B")
	err := n.StartService(context.Background(), "A")
	if err == nil || !strings.Contains(err.Error(), `in a cycle ("A", "B" -> "A")`) {
		t.Fatalf("err = %v, want the cycle named", err)
	}
}

// TestForceStopChecksDependentsAgainAtTheStop: a service that is not
// allowed and starts depending on the one being stopped after the
// dependents were checked is found when the dependents are read for the
// stop, and is not stopped.
func TestForceStopChecksDependentsAgainAtTheStop(t *testing.T) {
	f := newFakeSCM(running("A"), running("B", "A"), stopped("Late", "A"))
	reads := 0
	f.hook = func(entry string) {
		switch {
		case entry == "dependents A":
			reads++
		case reads == 1 && f.services["late"].state == stateStopped:
			// Right after the check read A's dependents.
			f.services["late"].state = stateRunning
		}
	}
	n := native(f)
	n.MayStop = onlyAllowed("A", "B")
	err := n.StopService(context.Background(), "A", true)
	want := `StopService of service "A" with force refused: service "Late", which depends on it, started while it was being stopped and is not an allowed service; ` +
		`the services stopped so far stay stopped; stop it on the node first, or allow it too (--allowed-service=Late) (rule allowed-services)`
	var denied *NotAllowedError
	if !errors.As(err, &denied) || err.Error() != want {
		t.Fatalf("err = %v\nwant  %q", err, want)
	}
	for _, c := range f.calls("stop") {
		if c == "stop Late" || c == "stop A" {
			t.Fatalf("stopped %q: %q", c, f.calls("stop"))
		}
	}
}

// agentFlags is a command's table of the flag behind the option that
// allows services, as pipeguard-agent's (cmd/pipeguard-agent/flagname).
func agentFlags(key string) (string, bool) {
	f, ok := map[string]string{OptionAllowedServices: "--allowed-service"}[key]
	return f, ok
}

// TestRefusalsNameTheAllowingOption: a refusal names the services to
// allow, alone without a Namer that names the option, and as the
// command's flag with one.
func TestRefusalsNameTheAllowingOption(t *testing.T) {
	cases := map[string]struct {
		namer func(string) (string, bool)
		want  string
	}{
		"the library's own words": {want: "(B C)"},
		"named by the command":    {namer: agentFlags, want: "(--allowed-service=B --allowed-service=C)"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			f := newFakeSCM(stopped("csi", "B"), stopped("B", "C"), stopped("C"))
			n := native(f)
			n.Namer = tc.namer
			n.MayStart = onlyAllowed("csi")
			err := n.StartService(context.Background(), "csi")
			want := `StartService of service "csi" refused: it would also start services it depends on that are not running and are not allowed services: "B", "C"; ` +
				`start them on the node first, or allow them too ` + tc.want + ` (rule allowed-services)`
			if err == nil || err.Error() != want {
				t.Fatalf("err = %v\nwant  %q", err, want)
			}
		})
	}
}
