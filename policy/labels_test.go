package policy_test

import (
	"context"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/pipeguard/pipeguard/api/v1alpha1"
	"github.com/pipeguard/pipeguard/policy"
)

func TestGuardedLabel(t *testing.T) {
	for key, want := range map[string]bool{
		"pipeguard.io/tier":             true,
		"team.pipeguard.io/tier":        true,
		"a.b.pipeguard.io/x":            true,
		policy.AllowLabel:               true,
		"pipeguard.io":                  false,
		"tier":                          false,
		"notpipeguard.io/tier":          false,
		"pipeguard.io.example.com/tier": false,
		"example.com/pipeguard.io":      false,
		"kubernetes.io/metadata.name":   false,
	} {
		if got := policy.GuardedLabel(key); got != want {
			t.Errorf("GuardedLabel(%q) = %v, want %v", key, got, want)
		}
	}
}

// A selector on guarded keys or the name label compiles; one that also
// grants unlabelled namespaces is in force with a warning saying so.
func TestSelectorKeysInForce(t *testing.T) {
	cases := map[string]struct {
		sel  *metav1.LabelSelector
		warn string
	}{
		"guarded matchLabels": {sel: &metav1.LabelSelector{MatchLabels: map[string]string{"pipeguard.io/tier": "gold"}}},
		"guarded subdomain":   {sel: &metav1.LabelSelector{MatchLabels: map[string]string{"storage.pipeguard.io/tier": "gold"}}},
		"name label In": {sel: &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{
			{Key: policy.NameLabel, Operator: metav1.LabelSelectorOpIn, Values: []string{"kube-system"}}}}},
		"Exists and NotIn together": {sel: &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{
			{Key: "pipeguard.io/tier", Operator: metav1.LabelSelectorOpExists},
			{Key: "pipeguard.io/tier", Operator: metav1.LabelSelectorOpNotIn, Values: []string{"bronze"}}}}},
		"NotIn alone": {sel: &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{
			{Key: "pipeguard.io/tier", Operator: metav1.LabelSelectorOpNotIn, Values: []string{"bronze"}}}},
			warn: `spec.allow.namespaceSelector "pipeguard.io/tier notin (bronze)" also matches a namespace without any pipeguard.io/ label, so it allows every namespace created from now on: whoever may create a namespace gets this allowance`},
		"DoesNotExist": {sel: &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{
			{Key: "pipeguard.io/deny", Operator: metav1.LabelSelectorOpDoesNotExist}}},
			warn: `spec.allow.namespaceSelector "!pipeguard.io/deny" also matches a namespace without any pipeguard.io/ label`},
		"name NotIn": {sel: &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{
			{Key: policy.NameLabel, Operator: metav1.LabelSelectorOpNotIn, Values: []string{"default"}}}},
			warn: `spec.allow.namespaceSelector "kubernetes.io/metadata.name notin (default)" also matches`},
		"empty selector": {sel: &metav1.LabelSelector{},
			warn: `spec.allow.namespaceSelector "" also matches a namespace without any pipeguard.io/ label`},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			p := pap("p", func(s *v1alpha1.PipeAccessPolicySpec) { s.Allow.NamespaceSelector = tc.sel })
			if _, err := newEngine(t).Load(context.Background(), []v1alpha1.PipeAccessPolicy{p}); err != nil {
				t.Fatalf("Load: %v", err)
			}
			got := policy.SelectorWarning(&p.Spec)
			if tc.warn == "" && got != "" || tc.warn != "" && (len(got) < len(tc.warn) || got[:len(tc.warn)] != tc.warn) {
				t.Fatalf("SelectorWarning = %q\nwant it to start with %q", got, tc.warn)
			}
		})
	}
}
