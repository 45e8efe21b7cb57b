package policy

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/pipeguard/pipeguard/policy/v1alpha1"
)

// AllowLabel is the namespace label the default policy honours. Its name is
// part of pipeguard's contract with cluster admins.
const AllowLabel = "pipeguard.io/allow-csi-proxy"

// DefaultPolicyName names the built-in policy in messages.
const DefaultPolicyName = "pipeguard-default"

// DefaultPolicy is in force while no PipeAccessPolicy exists: it protects
// every CSI Proxy pipe, allows privileged and HostProcess containers and
// namespaces labelled pipeguard.io/allow-csi-proxy=true, and denies
// everything else. No namespace is allowed implicitly.
func DefaultPolicy() v1alpha1.PipeAccessPolicy {
	yes := true
	return v1alpha1.PipeAccessPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: DefaultPolicyName},
		Spec: v1alpha1.PipeAccessPolicySpec{
			Pipes: []string{"csi-proxy*"},
			Allow: v1alpha1.Allowances{
				Privileged:  &yes,
				HostProcess: &yes,
				NamespaceSelector: &metav1.LabelSelector{
					MatchLabels: map[string]string{AllowLabel: "true"},
				},
			},
			EnforcementAction: v1alpha1.Deny,
		},
	}
}
