package controller

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/pipeguard/pipeguard/api/v1alpha1"
	"github.com/pipeguard/pipeguard/controller/inventory"
	"github.com/pipeguard/pipeguard/controller/limits"
	"github.com/pipeguard/pipeguard/policy"
)

func adminViolations(action policy.Verdict, msgs ...string) []policy.Violation {
	var vs []policy.Violation
	for _, m := range msgs {
		vs = append(vs, policy.Violation{Rule: "admin", Message: m, Action: action, Policies: []string{"smb"}})
	}
	return vs
}

// TestViolationNote: the words of the Event on a violating object, for
// what the audit of pods with pipe mounts (TestViolationEvents) does not
// show: cluster-scoped objects, admin messages longer than a note, and
// which violations are named when not all fit.
func TestViolationNote(t *testing.T) {
	pv := func(r inventory.Result) AuditResult {
		r.Kind, r.Name = "PersistentVolume", "pv"
		return AuditResult{Object: &corev1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: "pv"}}, Result: r}
	}
	const head = "PersistentVolume pv: admission would reject this object: "
	long := strings.Repeat("x", 600)
	for name, tc := range map[string]struct {
		r    AuditResult
		want string
	}{
		"a cluster-scoped object: its report is the ClusterPolicyReport": {
			r: pv(inventory.Result{Verdict: policy.Deny, Deny: adminViolations("deny", "a "+long, "b "+long, "c "+long)}),
			want: head + "[admin] a " + long +
				"; … and 2 more violations (see ClusterPolicyReport or ClusterReport pipeguard, or run pipeguard policy eval --cluster)",
		},
		"one message longer than a note is cut, the rest counted": {
			r: pv(inventory.Result{Verdict: policy.Deny, Deny: adminViolations("deny", "a "+strings.Repeat("é", 1000), "b")}),
			// 1023 bytes, of the 1024 a note holds: the head (57),
			// "[admin] a " (10), 417 runes of two bytes, the mark (3)
			// and the count (119); one more rune would not fit.
			want: head + "[admin] a " + strings.Repeat("é", 417) + "…" +
				"; … and 1 more violation (see ClusterPolicyReport or ClusterReport pipeguard, or run pipeguard policy eval --cluster)",
		},
		"what admission would deny is named first": {
			r: pv(inventory.Result{Verdict: policy.Deny,
				Deny: adminViolations("deny", "z "+long),
				Warn: adminViolations("warn", "a "+long, "b "+long)}),
			want: head + "[admin] z " + long +
				"; … and 2 more violations (see ClusterPolicyReport or ClusterReport pipeguard, or run pipeguard policy eval --cluster)",
		},
		"warn": {
			r:    pv(inventory.Result{Verdict: policy.Warn, Warn: adminViolations("warn", "a")}),
			want: "PersistentVolume pv: admission would warn about this object: [admin] a",
		},
	} {
		t.Run(name, func(t *testing.T) {
			got := violationNote(tc.r)
			if got != tc.want {
				t.Errorf("got  %q\nwant %q", got, tc.want)
			}
			if len(got) > limits.EventNote || !utf8.ValidString(got) {
				t.Errorf("a note of %d bytes (valid UTF-8: %v); the API server takes %d", len(got), utf8.ValidString(got), limits.EventNote)
			}
		})
	}
}

// regoWithUndefinedFunctions is a module whose rules call n functions
// that do not exist: one compile error each, up to OPA's error limit.
func regoWithUndefinedFunctions(n int) string {
	var b strings.Builder
	b.WriteString("package pipeguard.admission.smb\n\n")
	for i := range n {
		fmt.Fprintf(&b, "violation contains msg if {\n\tmsg := undefined_function_with_a_rather_long_name_%02d(input.request)\n}\n", i)
	}
	return b.String()
}

// TestNotInForce: why a policy's latest spec is not in force, in its Ready
// condition and in its Warning Event. The condition holds the whole error
// in rego's own words; the Event as many errors as fit, how many more
// there are and where to read them, and always what stays in force.
func TestNotInForce(t *testing.T) {
	smb := &v1alpha1.PipeAccessPolicy{ObjectMeta: metav1.ObjectMeta{Name: "smb"}, Spec: v1alpha1.PipeAccessPolicySpec{
		Pipes: []string{"csi-proxy-smb-*"},
		Rego:  []v1alpha1.RegoModule{{Name: "rules.rego", Source: regoWithUndefinedFunctions(30)}},
	}}
	compileErr := policy.CheckPolicy(context.Background(), smb)
	if compileErr == nil {
		t.Fatal("the module compiles; want compile errors")
	}
	good := smb.DeepCopy()
	good.Generation, good.Spec.Rego, good.Spec.EnforcementAction = 1, nil, v1alpha1.Warn
	line := func(i int) string {
		return fmt.Sprintf("\nsmb/rules.rego:%d: rego_type_error: undefined function undefined_function_with_a_rather_long_name_%02d", 4+3*i, i)
	}
	lines := func(n int) string {
		var b strings.Builder
		for i := range n {
			b.WriteString(line(i))
		}
		return b.String()
	}
	const head = "the latest spec (generation 2) is not in force: bundle activation failed: 11 errors occurred:"
	const see = "see the Ready condition of this PipeAccessPolicy"
	for name, tc := range map[string]struct {
		max  int
		o    *outcome
		want string
	}{
		"condition: every error": {
			max: limits.ConditionMessage, o: &outcome{err: compileErr, fallback: good},
			want: head + lines(10) + "\nrego_compile_error: error limit reached; generation 1 of this policy stays in force until the error is fixed (enforcementAction warn)",
		},
		"event: the errors that fit and a count": {
			max: limits.EventNote, o: &outcome{err: compileErr, fallback: good},
			want: head + lines(7) + "\n… and 4 more errors (" + see + "); generation 1 of this policy stays in force until the error is fixed (enforcementAction warn)",
		},
		"event: no version in force": {
			max: limits.EventNote, o: &outcome{err: compileErr},
			want: head + lines(7) + "\n… and 4 more errors (" + see + "); no version of this policy is in force; fix the error to enforce it",
		},
		"event: one error longer than a note is cut before what stays in force": {
			max: limits.EventNote, o: &outcome{err: errors.New("spec: " + strings.Repeat("é", 1000))},
			// 1023 bytes: the 1024th would split a rune.
			want: "the latest spec (generation 2) is not in force: spec: " + strings.Repeat("é", 449) + "…" +
				"; no version of this policy is in force; fix the error to enforce it",
		},
	} {
		t.Run(name, func(t *testing.T) {
			got := notInForce(tc.max, 2, tc.o, see)
			if got != tc.want {
				t.Errorf("got  %q\nwant %q", got, tc.want)
			}
			if len(got) > tc.max || !utf8.ValidString(got) {
				t.Errorf("%d bytes (valid UTF-8: %v), over %d", len(got), utf8.ValidString(got), tc.max)
			}
		})
	}
	// What fits is unchanged from the words of the error itself.
	if got, want := notInForce(limits.ConditionMessage, 2, &outcome{err: compileErr}, see),
		fmt.Sprintf("the latest spec (generation 2) is not in force: %v; %s", compileErr, fallbackNote(nil)); got != want {
		t.Errorf("got  %q\nwant %q", got, want)
	}
}
