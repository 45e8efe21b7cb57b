package main

import (
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/pipeguard/pipeguard/api/v1alpha1"
	"github.com/pipeguard/pipeguard/policy"
	"github.com/pipeguard/pipeguard/webhook"
)

// namespaces returns n namespaces ns-00000… with the labels a cluster
// usually sets. Every tenth carries pipeguard's allowance label, and some
// carry labels that generated policies select on.
func namespaces(n int) webhook.StaticNamespaces {
	out := make(webhook.StaticNamespaces, n)
	for i := range n {
		name := fmt.Sprintf(nsFormat, i)
		labels := map[string]string{
			"kubernetes.io/metadata.name": name,
			"team":                        fmt.Sprintf("team-%d", i%97),
			"environment":                 []string{"prod", "staging", "dev"}[i%3],
		}
		if i%10 == 0 {
			labels[policy.AllowLabel] = "true"
		}
		if i%7 == 0 {
			labels[fmt.Sprintf("agents.example.com/vendor-%d", i%5)] = "true"
		}
		out[name] = labels
	}
	return out
}

// accessPolicies returns n PipeAccessPolicies: the default policy, then
// policies for vendor agent pipes with distinct patterns. A few select
// namespaces by label or name, one warns, one is a dryrun, and two also
// protect CSI Proxy pipes, so that some mounts are protected by several
// policies. None changes a decision of the request mix.
func accessPolicies(n int) []v1alpha1.PipeAccessPolicy {
	csiProxy := policy.DefaultPolicy()
	csiProxy.Name = "csi-proxy"
	out := []v1alpha1.PipeAccessPolicy{csiProxy}
	for i := 1; i < n; i++ {
		p := v1alpha1.PipeAccessPolicy{
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("vendor-%03d", i)},
			Spec: v1alpha1.PipeAccessPolicySpec{
				Pipes:             []string{fmt.Sprintf("vendor%03d-agent-*", i), fmt.Sprintf("vendor%03d-control", i)},
				EnforcementAction: v1alpha1.Deny,
			},
		}
		switch i {
		case 1, 2:
			p.Spec.Pipes = append(p.Spec.Pipes, []string{"csi-proxy-disk-*", "csi-proxy-smb-v1"}[i-1])
		case 3:
			p.Spec.EnforcementAction = v1alpha1.Warn
		case 4:
			p.Spec.EnforcementAction = v1alpha1.DryRun
		}
		switch {
		case i%10 == 1:
			p.Spec.Allow.NamespaceSelector = &metav1.LabelSelector{
				MatchLabels: map[string]string{fmt.Sprintf("agents.example.com/vendor-%d", i%5): "true"},
			}
		case i%10 == 5:
			p.Spec.Allow.NamespaceSelector = &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{
				{Key: "environment", Operator: metav1.LabelSelectorOpIn, Values: []string{"staging", "dev"}},
			}}
		case i%10 == 7:
			p.Spec.Allow.Namespaces = []string{fmt.Sprintf(nsFormat, i)}
		}
		out = append(out, p)
	}
	return out
}
