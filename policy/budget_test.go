package policy_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/pipeguard/pipeguard/api/v1alpha1"
	"github.com/pipeguard/pipeguard/policy"
)

// slowRule never ends in time: a billion steps that allocate nothing, so
// that only the deadline stops it.
const slowRule = `package pipeguard.admission.slow

violation contains "never" if {
	r := numbers.range(1, 1000)
	some i in r
	some j in r
	some k in r
	i + j + k < 0
}
`

// badRule raises a builtin error on the object named "bad" only.
const badRule = `package pipeguard.admission.strict

violation contains "bad is a number" if {
	input.object.name == "bad"
	to_number("x") > 0
}
`

// regoPolicy is a deny policy of csi-proxy pipes with one admin module.
func regoPolicy(name string, generation int64, source string) v1alpha1.PipeAccessPolicy {
	p := pap(name, func(s *v1alpha1.PipeAccessPolicySpec) {
		s.Allow.Namespaces = []string{"team-a"}
		s.Rego = []v1alpha1.RegoModule{{Name: "rules.rego", Source: source}}
	})
	p.Generation = generation
	return p
}

const fastRule = `package pipeguard.admission.fast

violation contains "fast says no" if input.object.name == "fast-no"
`

func flagNames(key string) (string, bool) {
	return "--admin-rule-timeout", key == policy.OptionAdminRuleTimeout
}

// An admin rule that runs long fails the evaluation that runs it, closed:
// the answer comes at the deadline, not when the rule would end, as an
// error naming the policy whose rules ran out of time and the option that
// bounds them. The engine counts it for the policy's status and metric, and
// keeps deciding: the stopped rules give their slot back.
func TestSlowAdminRuleFailsClosed(t *testing.T) {
	ctx := context.Background()
	const timeout = 200 * time.Millisecond
	e, err := policy.NewEngine(ctx, policy.Options{MaxConcurrent: 1, AdminRuleTimeout: timeout, Namer: flagNames})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.Load(ctx, []v1alpha1.PipeAccessPolicy{regoPolicy("fast", 1, fastRule), regoPolicy("slow", 3, slowRule)}); err != nil {
		t.Fatal(err)
	}
	in := podInput("team-a", nil, diskPipeMount())
	in.Object.Name = "driver"

	for review := 1; review <= 2; review++ {
		start := time.Now()
		d, err := e.Evaluate(ctx, in)
		took := time.Since(start)
		var are *policy.AdminRuleError
		if !errors.As(err, &are) || !are.TimedOut() || are.Policy != "slow" {
			t.Fatalf("review %d: Evaluate = %+v, %v; want the admin rules of slow to time out", review, d, err)
		}
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("review %d: %v does not wrap context.DeadlineExceeded", review, err)
		}
		want := `the admin rules (spec.rego) of PipeAccessPolicy "slow" took longer than --admin-rule-timeout (200ms) and were stopped; make them faster, or raise --admin-rule-timeout`
		if err.Error() != want {
			t.Errorf("review %d: error\n%s\nwant\n%s", review, err, want)
		}
		// Generous: the API server waits 5 s.
		if took > 5*time.Second {
			t.Errorf("review %d answered after %s; the API server would have given up", review, took)
		}
	}

	ts := e.AdminRuleTimeouts()
	if len(ts) != 1 || ts[0].Policy != "slow" || ts[0].Generation != 3 || ts[0].Count != 2 || ts[0].Total != 2 || ts[0].Since.After(ts[0].Last) {
		t.Fatalf("AdminRuleTimeouts = %+v; want 2 of slow, generation 3", ts)
	}
	select {
	case <-e.AdminRuleTimedOut():
	default:
		t.Error("no notice of the timeouts")
	}
	warning := e.AdminRuleWarning("slow", 3)
	for _, words := range []string{
		"the admin rules (spec.rego) of this policy took longer than --admin-rule-timeout (200ms) in 2 evaluations on this replica since " + ts[0].Since.UTC().Format(time.RFC3339),
		"those reviews were rejected and those audited objects reported as error; make the rules faster, or raise --admin-rule-timeout",
	} {
		if !strings.Contains(warning, words) {
			t.Errorf("warning %q does not say %q", warning, words)
		}
	}
	if w := e.AdminRuleWarning("fast", 1); w != "" {
		t.Errorf("fast has the warning %q", w)
	}

	// A fixed version of the policy starts afresh; the total goes on.
	if _, err := e.Load(ctx, []v1alpha1.PipeAccessPolicy{regoPolicy("fast", 1, fastRule), regoPolicy("slow", 4, strings.ReplaceAll(slowRule, "1000", "2"))}); err != nil {
		t.Fatal(err)
	}
	if w := e.AdminRuleWarning("slow", 4); w != "" {
		t.Errorf("the fixed version has the warning %q", w)
	}
	in.Object.Name = "fast-no"
	d, err := e.Evaluate(ctx, in)
	if err != nil || !d.Denied() || policy.Messages(d.Deny)[0] != "[fast] fast says no" {
		t.Fatalf("after the fix: %+v, %v; want fast's denial", d, err)
	}
	if ts := e.AdminRuleTimeouts(); ts[0].Total != 2 {
		t.Errorf("total after the fix = %d, want 2", ts[0].Total)
	}
}

// A builtin error in an admin rule (strict builtin errors) fails the
// evaluation of the object it happens on, naming the policy and OPA's
// error; an object on which the rule raises nothing is decided as usual.
// Neither is a silent allow.
func TestAdminRuleBuiltinErrorFailsClosed(t *testing.T) {
	ctx := context.Background()
	e := newEngine(t)
	if _, err := e.Load(ctx, []v1alpha1.PipeAccessPolicy{regoPolicy("strict", 1, badRule)}); err != nil {
		t.Fatal(err)
	}
	in := podInput("team-b", nil, diskPipeMount())
	in.Object.Name = "bad"
	d, err := e.Evaluate(ctx, in)
	var are *policy.AdminRuleError
	if !errors.As(err, &are) || are.TimedOut() || are.Policy != "strict" {
		t.Fatalf("Evaluate(bad) = %+v, %v; want the admin rules of strict to fail", d, err)
	}
	for _, words := range []string{`the admin rules (spec.rego) of PipeAccessPolicy "strict" failed: `, "strict/rules.rego:5", "to_number", "; fix the rule the error points at"} {
		if !strings.Contains(err.Error(), words) {
			t.Errorf("error %q does not say %q", err, words)
		}
	}
	if len(e.AdminRuleTimeouts()) != 0 {
		t.Errorf("a builtin error counted as a timeout: %+v", e.AdminRuleTimeouts())
	}
	in.Object.Name = "good"
	d, err = e.Evaluate(ctx, in)
	if err != nil || !d.Denied() {
		t.Fatalf("Evaluate(good) = %+v, %v; want the shipped rules' denial", d, err)
	}
}

// A negative timeout is refused, naming the option as the engine's caller
// names it.
func TestAdminRuleTimeoutOption(t *testing.T) {
	for namer, want := range map[string]string{
		"":      "policy options: Options.AdminRuleTimeout is -1s; want 0 for the default (1s) or a positive duration",
		"flags": "policy options: --admin-rule-timeout is -1s; want 0 for the default (1s) or a positive duration",
	} {
		opts := policy.Options{AdminRuleTimeout: -time.Second}
		if namer != "" {
			opts.Namer = flagNames
		}
		_, err := policy.NewEngine(context.Background(), opts)
		if err == nil || err.Error() != want {
			t.Errorf("NewEngine with a negative timeout (namer %q): %v; want %q", namer, err, want)
		}
	}
}
