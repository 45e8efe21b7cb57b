package controller_test

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/events"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/pipeguard/pipeguard/api/v1alpha1"
	"github.com/pipeguard/pipeguard/controller"
	"github.com/pipeguard/pipeguard/controller/policyreport"
	"github.com/pipeguard/pipeguard/policy"
	"github.com/pipeguard/pipeguard/webhook"
)

// regoPolicy protects CSI Proxy's pipes, allows namespace csi-driver, and
// brings one admin module.
func regoPolicy(name, source string) v1alpha1.PipeAccessPolicy {
	p := csiPolicy()
	p.Name = name
	p.Spec.Rego = []v1alpha1.RegoModule{{Name: "rules.rego", Source: source}}
	return p
}

// strictRule raises a builtin error on the object named "bad" only.
const strictRule = `package pipeguard.admission.strict

violation contains "bad is a number" if {
	input.object.name == "bad"
	to_number("x") > 0
}
`

// slowRule runs for a billion steps on the object named "slow" only.
const slowRule = `package pipeguard.admission.slow

violation contains "never" if {
	input.object.name == "slow"
	r := numbers.range(1, 1000)
	some i in r
	some j in r
	some k in r
	i + j + k < 0
}
`

// One object whose evaluation fails, by a builtin error or by running out
// of time, does not stop the audit: the pass finishes, the other objects'
// results are there, and each failed object is reported as error, with a
// message naming the object, the policy and what failed, in the policy's
// status, the PolicyReport and an Event.
func TestAuditReportsObjectsItCannotEvaluate(t *testing.T) {
	ctx := context.Background()
	s := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	if err := v1alpha1.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	strict, slow := regoPolicy("strict", strictRule), regoPolicy("slow", slowRule)
	c := fake.NewClientBuilder().WithScheme(s).WithStatusSubresource(&v1alpha1.PipeAccessPolicy{}).WithObjects(
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "team-a"}},
		mountsPod("bad", 1), mountsPod("good", 1), mountsPod("slow", 1), &strict, &slow,
	).Build()
	engine, err := policy.NewEngine(ctx, policy.Options{AdminRuleTimeout: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := engine.Load(ctx, []v1alpha1.PipeAccessPolicy{strict, slow}); err != nil {
		t.Fatal(err)
	}

	rep, err := controller.Audit(ctx, c, engine, webhook.CachedNamespaces{Reader: c}, nil)
	if err != nil {
		t.Fatalf("the audit pass failed: %v", err)
	}
	if rep.Objects != 3 || rep.Errors != 2 || len(rep.Results) != 3 {
		t.Fatalf("%d objects, %d errors, %d results; want 3 objects, 2 errors, 3 results", rep.Objects, rep.Errors, len(rep.Results))
	}
	verdicts := map[string]policy.Verdict{}
	for _, r := range rep.Results {
		verdicts[r.Name] = r.Verdict
	}
	if verdicts["bad"] != policy.Error || verdicts["slow"] != policy.Error || verdicts["good"] != policy.Deny {
		t.Errorf("verdicts %v; want bad and slow error, good deny", verdicts)
	}
	const (
		badMessage  = `[evaluation-error] Pod team-a/bad could not be evaluated: the admin rules (spec.rego) of PipeAccessPolicy "strict" failed: strict/rules.rego:5: eval_builtin_error: to_number: strconv.ParseFloat: parsing "x": invalid syntax; fix the rule the error points at`
		slowMessage = `[evaluation-error] Pod team-a/slow could not be evaluated: the admin rules (spec.rego) of PipeAccessPolicy "slow" took longer than Options.AdminRuleTimeout (100ms) and were stopped; make them faster, or raise Options.AdminRuleTimeout`
	)
	for pol, want := range map[string]string{"strict": badMessage, "slow": slowMessage} {
		var errs []string
		for _, v := range rep.ByPolicy[pol] {
			if v.Action == "error" {
				errs = append(errs, v.Message)
			}
		}
		if len(errs) != 1 || errs[0] != want {
			t.Errorf("errors of policy %s: %q\nwant [%q]", pol, errs, want)
		}
	}

	// The PolicyReport of team-a holds the denial and both errors.
	reports := policyreport.Build(controller.ReportViolations(rep), rep.Time, nil, policyreport.Limits{})
	r := reports["team-a"]
	if r == nil {
		t.Fatal("no PolicyReport for team-a")
	}
	if r.Summary.Error != 2 || r.Summary.Fail < 1 {
		t.Errorf("summary %+v; want 2 errors and the denial of good", r.Summary)
	}
	got := map[string]string{}
	for _, res := range r.Results {
		if res.Result == policyreport.ResultError {
			got[res.Resources[0].Name] = res.Policy + " " + res.Rule + " " + res.Properties["action"] + ": " + res.Message
		}
	}
	for name, want := range map[string]string{
		"bad":  "strict evaluation-error error: " + strings.TrimPrefix(badMessage, "[evaluation-error] "),
		"slow": "slow evaluation-error error: " + strings.TrimPrefix(slowMessage, "[evaluation-error] "),
	} {
		if got[name] != want {
			t.Errorf("error result of %s:\n got %q\nwant %q", name, got[name], want)
		}
	}

	// RunOnce records the pass: status and Events.
	rec := events.NewFakeRecorder(10)
	a, err := controller.NewAuditor(controller.AuditorOptions{Config: &rest.Config{}, Scheme: s, Client: c, Engine: engine, Recorder: rec})
	if err != nil {
		t.Fatal(err)
	}
	if err := a.RunOnce(ctx, c); err != nil {
		t.Fatalf("RunOnce: %v", err)
	}
	close(rec.Events)
	var evs []string
	for e := range rec.Events {
		evs = append(evs, e)
	}
	if want := "Warning PipeAccessViolation Pod bad: admission would reject this object: " + badMessage; !slices.Contains(evs, want) {
		t.Errorf("events:\n%s\nwant among them\n%s", strings.Join(evs, "\n"), want)
	}
	var st v1alpha1.PipeAccessPolicy
	if err := c.Get(ctx, client.ObjectKey{Name: "strict"}, &st); err != nil {
		t.Fatal(err)
	}
	if st.Status.TotalViolations == nil || *st.Status.TotalViolations != 2 {
		t.Errorf("strict's status counts %v violations, want 2 (the error of bad, the denial of good)", st.Status.TotalViolations)
	}
	found := false
	for _, v := range st.Status.Violations {
		if v.Name == "bad" && v.Action == "error" && v.Message == badMessage {
			found = true
		}
	}
	if !found {
		t.Errorf("strict's status violations %+v hold no error for bad", st.Status.Violations)
	}
}
