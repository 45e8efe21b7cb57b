package controller_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/pipeguard/pipeguard/controller"
	"github.com/pipeguard/pipeguard/policy"
)

func TestNewAuditor(t *testing.T) {
	engine, err := policy.NewEngine(context.Background(), policy.Options{})
	if err != nil {
		t.Fatal(err)
	}
	base := controller.AuditorOptions{Config: &rest.Config{}, Scheme: runtime.NewScheme(), Client: fake.NewClientBuilder().Build(), Engine: engine}
	for name, tc := range map[string]struct {
		mutate func(*controller.AuditorOptions)
		err    string
	}{
		"defaults":          {mutate: func(*controller.AuditorOptions) {}},
		"negative interval": {mutate: func(o *controller.AuditorOptions) { o.Interval = -time.Second }, err: "audit: interval -1s is negative; give a positive interval"},
		"no engine":         {mutate: func(o *controller.AuditorOptions) { o.Engine = nil }, err: "audit: Config, Scheme, Client and Engine are required"},
	} {
		t.Run(name, func(t *testing.T) {
			opts := base
			tc.mutate(&opts)
			a, err := controller.NewAuditor(opts)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err = %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			// Only the leader audits: a replica that does not lead
			// never starts the auditor, so it reads and writes nothing.
			if !a.NeedLeaderElection() {
				t.Error("the auditor runs without leader election; want it on the leader only")
			}
		})
	}
}
