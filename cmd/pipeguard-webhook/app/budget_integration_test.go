package app_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr/testr"
	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/pipeguard/pipeguard/api/v1alpha1"
	"github.com/pipeguard/pipeguard/cmd/pipeguard-webhook/app"
	"github.com/pipeguard/pipeguard/controller"
	"github.com/pipeguard/pipeguard/controller/policyreport"
	"github.com/pipeguard/pipeguard/internal/testing/testenv"
	"github.com/pipeguard/pipeguard/policy"
)

// budgetRules are the admin rules of TestAdminRuleBudgetOnControlPlane: one
// that runs for a billion steps on an object named "slow", one that raises
// a builtin error on an object named "bad".
var budgetRules = map[string]string{
	"slow": `package pipeguard.admission.slow

violation contains "never" if {
	input.object.name == "slow"
	r := numbers.range(1, 1000)
	some i in r
	some j in r
	some k in r
	i + j + k < 0
}
`,
	"strict": `package pipeguard.admission.strict

violation contains "bad is a number" if {
	input.object.name == "bad"
	to_number("x") > 0
}
`,
}

// budgetPolicy protects CSI Proxy's pipes, allows namespaces csi-driver
// and team-b, and brings its admin rules.
func budgetPolicy(name string) *v1alpha1.PipeAccessPolicy {
	return &v1alpha1.PipeAccessPolicy{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: v1alpha1.PipeAccessPolicySpec{
		Pipes: []string{"csi-proxy-*"},
		Allow: v1alpha1.Allowances{Namespaces: []string{"csi-driver", "team-b"}},
		Rego:  []v1alpha1.RegoModule{{Name: "rules.rego", Source: budgetRules[name]}},
	}}
}

// An admin rule that runs too long, or raises an error, on one object
// fails closed for that object alone, in admission and in the audit:
// reviewing it is rejected with an internal error naming the policy and
// what failed, answered before the API server gives up; the audit finishes
// its pass, reports the object as error in the policy's status, metrics
// and PolicyReport, and reports the others as usual; the slow policy stays
// in force, its Ready message saying how often its rules ran out of time;
// pipeguard_admin_rule_timeouts_total counts them.
func TestAdminRuleBudgetOnControlPlane(t *testing.T) {
	s := scheme(t)
	ctrllog.SetLogger(testr.New(t))
	env := testenv.Start(t, testenv.Options{
		Scheme:            s,
		CRDDirectoryPaths: []string{"../../../config/crd/bases"},
		CRDs:              loadReportCRDs(t),
		Webhooks:          testenv.WebhookOptions{Paths: []string{"../../../config/webhook/manifests.yaml"}},
	})
	ws := env.WebhookServer()
	registry := prometheus.NewRegistry()
	const timeout = 500 * time.Millisecond
	a, ctx := app.RunForTest(t, app.Options{
		Config: env.Config, Logger: testr.New(t),
		WebhookHost: ws.Host, WebhookPort: ws.Port, CertDir: ws.CertDir,
		MetricsAddr: "0", ProbeAddr: "0", Registry: registry,
		AuditInterval: time.Hour, AdminRuleTimeout: timeout,
	})
	c := env.Client
	if err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Minute, true, func(context.Context) (bool, error) {
		return a.Ready(), nil
	}); err != nil {
		t.Fatalf("webhook never became ready: %v", err)
	}
	allowed := map[string]string{policy.AllowLabel: "true"}
	mustCreate(t, c,
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "csi-driver", Labels: allowed}},
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "team-b", Labels: allowed}},
	)
	// The pods exist before the rules that fail on them: the built-in
	// default admits them in a labelled namespace, once the webhook answers.
	if err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		return c.Create(ctx, pipePod("slow", "csi-driver")) == nil, nil
	}); err != nil {
		t.Fatalf("the webhook never admitted the first pod: %v", err)
	}
	mustCreate(t, c, pipePod("bad", "csi-driver"), pipePod("good", "csi-driver"), budgetPolicy("slow"), budgetPolicy("strict"))
	for _, name := range []string{"slow", "strict"} {
		if err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
			var p v1alpha1.PipeAccessPolicy
			if err := c.Get(ctx, client.ObjectKey{Name: name}, &p); err != nil {
				return false, err
			}
			return meta.IsStatusConditionTrue(p.Status.Conditions, controller.ConditionReady), nil
		}); err != nil {
			t.Fatalf("policy %s never came into force: %v", name, err)
		}
	}

	t.Run("admission fails closed, naming the policy", func(t *testing.T) {
		for name, want := range map[string]string{
			"slow": `internal error: evaluating pipe access policies for Pod "slow": the admin rules (spec.rego) of PipeAccessPolicy "slow" took longer than --admin-rule-timeout (500ms) and were stopped; make them faster, or raise --admin-rule-timeout; the request is rejected until evaluation succeeds`,
			"bad":  `internal error: evaluating pipe access policies for Pod "bad": the admin rules (spec.rego) of PipeAccessPolicy "strict" failed: strict/rules.rego:5: eval_builtin_error: to_number: strconv.ParseFloat: parsing "x": invalid syntax; fix the rule the error points at; the request is rejected until evaluation succeeds`,
		} {
			start := time.Now()
			err := c.Create(ctx, pipePod(name, "team-b"), client.DryRunAll)
			took := time.Since(start)
			if err == nil || !strings.Contains(err.Error(), want) {
				t.Errorf("creating pod %s: %v\nwant a rejection saying %q", name, err, want)
			}
			// Generous: what matters is that the webhook answered, and
			// the API server did not give up on it after its 5 s.
			if took > 5*time.Second || strings.Contains(err.Error(), "context deadline exceeded") || strings.Contains(err.Error(), "failed calling webhook") {
				t.Errorf("creating pod %s took %s (%v); want the webhook's answer before the API server's timeout", name, took, err)
			}
		}
		if err := c.Create(ctx, pipePod("good", "team-b"), client.DryRunAll); err != nil {
			t.Errorf("creating pod good, which no rule fails on: %v", err)
		}
	})

	t.Run("the audit reports the failed objects as error and the others as usual", func(t *testing.T) {
		for pol, want := range map[string]string{
			"slow":   `[evaluation-error] Pod csi-driver/slow could not be evaluated: the admin rules (spec.rego) of PipeAccessPolicy "slow" took longer than --admin-rule-timeout (500ms) and were stopped; make them faster, or raise --admin-rule-timeout`,
			"strict": `[evaluation-error] Pod csi-driver/bad could not be evaluated: the admin rules (spec.rego) of PipeAccessPolicy "strict" failed: strict/rules.rego:5: eval_builtin_error: to_number: strconv.ParseFloat: parsing "x": invalid syntax; fix the rule the error points at`,
		} {
			st := auditStatus(t, c, pol, "the audit of "+pol, func(s v1alpha1.PipeAccessPolicyStatus) bool {
				return s.TotalViolations != nil && *s.TotalViolations == 1
			})
			if v := st.Violations[0]; v.Kind != "Pod" || v.Namespace != "csi-driver" || v.Action != "error" || v.Message != want {
				t.Errorf("status violation of %s: %+v\nwant action error and the message %q", pol, v, want)
			}
			if g := auditGauge(t, registry, pol, "error"); g != 1 {
				t.Errorf("pipeguard_audit_violations{policy=%s,action=error} = %v, want 1", pol, g)
			}
		}
		got := pollReports(t, c, "PolicyReport of csi-driver", func(m map[string][]storedReport) bool {
			r := onlyReport(m, "csi-driver")
			return r != nil && r.Summary.Error == 2
		})
		r := onlyReport(got, "csi-driver")
		if r.Summary != (policyreport.Summary{Error: 2}) {
			t.Errorf("summary %+v, want 2 errors and nothing else (good is allowed)", r.Summary)
		}
		results := map[string]policyreport.Result{}
		for _, res := range r.Results {
			results[res.Resources[0].Name] = res
		}
		for name, pol := range map[string]string{"slow": "slow", "bad": "strict"} {
			res := results[name]
			if res.Policy != pol || res.Rule != controller.RuleEvaluationError || res.Result != policyreport.ResultError || res.Properties["action"] != "error" ||
				!strings.HasPrefix(res.Message, "Pod csi-driver/"+name+" could not be evaluated: the admin rules (spec.rego) of PipeAccessPolicy \""+pol+"\"") {
				t.Errorf("result of %s: %+v; want an error of policy %s that says why", name, res, pol)
			}
		}
	})

	t.Run("the slow policy stays in force and says its rules ran out of time", func(t *testing.T) {
		var cond *metav1.Condition
		if err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
			var p v1alpha1.PipeAccessPolicy
			if err := c.Get(ctx, client.ObjectKey{Name: "slow"}, &p); err != nil {
				return false, err
			}
			cond = meta.FindStatusCondition(p.Status.Conditions, controller.ConditionReady)
			return cond != nil && strings.HasPrefix(cond.Message, "warning: the admin rules"), nil
		}); err != nil {
			t.Fatalf("the Ready message of slow never said its rules ran out of time: %v; last %+v", err, cond)
		}
		const head = "warning: the admin rules (spec.rego) of this policy took longer than --admin-rule-timeout (500ms) in "
		const tail = "; those reviews were rejected and those audited objects reported as error; make the rules faster, or raise --admin-rule-timeout; generation 1 of this policy is in force"
		if cond.Status != metav1.ConditionTrue || cond.Reason != controller.ReasonEnforced || !strings.HasPrefix(cond.Message, head) || !strings.Contains(cond.Message, " on this replica since ") || !strings.Contains(cond.Message, tail) {
			t.Errorf("Ready of slow: %s %s %q\nwant True Enforced, starting %q and holding %q", cond.Status, cond.Reason, cond.Message, head, tail)
		}
		var strict v1alpha1.PipeAccessPolicy
		if err := c.Get(ctx, client.ObjectKey{Name: "strict"}, &strict); err != nil {
			t.Fatal(err)
		}
		if m := meta.FindStatusCondition(strict.Status.Conditions, controller.ConditionReady).Message; strings.HasPrefix(m, "warning:") {
			t.Errorf("strict, whose rules never ran out of time, warns: %q", m)
		}
	})

	t.Run("the metric counts the timeouts", func(t *testing.T) {
		families, err := registry.Gather()
		if err != nil {
			t.Fatal(err)
		}
		counts := map[string]float64{}
		for _, f := range families {
			if f.GetName() != "pipeguard_admin_rule_timeouts_total" {
				continue
			}
			for _, m := range f.GetMetric() {
				counts[m.GetLabel()[0].GetValue()] = m.GetCounter().GetValue()
			}
		}
		// The review above and at least one audit pass of pod slow.
		if counts["slow"] < 2 || len(counts) != 1 {
			t.Errorf("pipeguard_admin_rule_timeouts_total = %v; want at least 2 for slow and nothing else", counts)
		}
	})
}
