package app

import (
	"path"
	"testing"

	"google.golang.org/grpc"

	"github.com/pipeguard/pipeguard/agent/confine"
	"github.com/pipeguard/pipeguard/agent/methods"
	"github.com/pipeguard/pipeguard/internal/testing/wmitest"
)

// TestEveryServedMethodIsInTheTable checks that the table of request fields
// (package methods), which the guard, the group servers and the audit
// record share, lists every method of every served API group version.
func TestEveryServedMethodIsInTheTable(t *testing.T) {
	conf, err := confine.New(confine.Options{Flavour: confine.Windows, Roots: []string{`C:\var\lib\kubelet`}})
	if err != nil {
		t.Fatal(err)
	}
	eps, err := buildEndpoints(Options{GOOS: "windows"}, wmitest.New(), conf, nil)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, ep := range eps {
		g := grpc.NewServer()
		ep.Register(g)
		for service, info := range g.GetServiceInfo() {
			for _, m := range info.Methods {
				n++
				if _, ok := methods.Lookup(ep.Group, m.Name); !ok {
					t.Errorf("%s %s: %s is not in the table of package methods", ep.Group, ep.Version, path.Join(service, m.Name))
				}
			}
		}
	}
	if n == 0 {
		t.Fatal("no methods served")
	}
}
