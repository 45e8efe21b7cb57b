package policy

import (
	"fmt"
	"sort"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/pipeguard/pipeguard/api/v1alpha1"
)

// GuardedLabelDomain is the label prefix whose keys only granters may set
// on a Namespace: keys "pipeguard.io/<name>" and "<sub>.pipeguard.io/<name>".
// The namespace guard protects every such key whatever the policies say, so a
// policy may read them in its namespaceSelector without a tenant having set
// the value before the policy existed.
const GuardedLabelDomain = "pipeguard.io"

// NameLabel is the label the API server sets on every Namespace to its
// name; nobody can set it to anything else, so a selector may read it.
const NameLabel = "kubernetes.io/metadata.name"

// GuardedLabel reports whether key is under GuardedLabelDomain: a key whose
// prefix is pipeguard.io or a subdomain of it. The Namespace webhook's
// matchCondition (config/webhook/manifests.yaml) spells the same test in
// CEL, so that only changes of these keys wait for the webhook;
// test/admission's tests hold the two to the same answers.
func GuardedLabel(key string) bool {
	prefix, _, ok := strings.Cut(key, "/")
	if !ok {
		return false
	}
	return prefix == GuardedLabelDomain || strings.HasSuffix(prefix, "."+GuardedLabelDomain)
}

// selectableLabel reports whether a namespaceSelector may read key: a
// label that no user without the grant verb can have set.
func selectableLabel(key string) bool {
	return GuardedLabel(key) || key == NameLabel
}

// UnguardedLabelError is why a policy whose namespaceSelector reads a
// label a tenant could have set is not in force. The guard decides who may
// change a label when the change is made; a key it did not guard then could
// carry any value today, so such a key must never grant.
type UnguardedLabelError struct {
	// Keys are the label keys the selector may not read, sorted.
	Keys []string
}

func (e *UnguardedLabelError) Error() string {
	quoted := make([]string, len(e.Keys))
	for i, k := range e.Keys {
		quoted[i] = fmt.Sprintf("%q", k)
	}
	return fmt.Sprintf("spec.allow.namespaceSelector reads label %s, which anyone who may edit a namespace can set, "+
		"whenever they set it; select only labels under %s/ (for example \"%s/tier\"), which only users with the %q verb on "+
		"pipeaccesspolicies.pipeguard.io may set, or %s, or list the namespaces in spec.allow.namespaces",
		strings.Join(quoted, ", "), GuardedLabelDomain, GuardedLabelDomain, "grant", NameLabel)
}

// checkSelectorKeys returns an *UnguardedLabelError when sel reads a label
// that is neither guarded nor the name label.
func checkSelectorKeys(sel *metav1.LabelSelector) error {
	var bad []string
	for k := range sel.MatchLabels {
		if !selectableLabel(k) {
			bad = append(bad, k)
		}
	}
	for _, r := range sel.MatchExpressions {
		if !selectableLabel(r.Key) {
			bad = append(bad, r.Key)
		}
	}
	if len(bad) == 0 {
		return nil
	}
	sort.Strings(bad)
	return &UnguardedLabelError{Keys: dedupe(bad)}
}

// SelectorWarning says what a valid namespaceSelector grants beyond labelled
// namespaces, or "" when it grants only namespaces that carry a guarded
// label (or are named).
func SelectorWarning(spec *v1alpha1.PipeAccessPolicySpec) string {
	sel := spec.Allow.NamespaceSelector
	if sel == nil {
		return ""
	}
	s, err := metav1.LabelSelectorAsSelector(sel)
	if err != nil || !selectsUnlabelled(s) {
		return ""
	}
	return fmt.Sprintf("spec.allow.namespaceSelector %q also matches a namespace without any %s/ label, "+
		"so it allows every namespace created from now on: whoever may create a namespace gets this allowance",
		s.String(), GuardedLabelDomain)
}

// unlabelledNamespace stands for a namespace created tomorrow with no
// guarded label: its name label holds a value no real namespace has.
var unlabelledNamespace = labels.Set{NameLabel: "-"}

// selectsUnlabelled reports whether a selector matches a namespace that has
// none of the guarded labels, e.g. `NotIn` or `DoesNotExist` alone, or an
// empty selector: such an allowance covers every new namespace, so whoever
// may create a namespace gets it without any label being set.
func selectsUnlabelled(s labels.Selector) bool {
	return s != nil && s.Matches(unlabelledNamespace)
}

func dedupe(sorted []string) []string {
	out := sorted[:0]
	for i, s := range sorted {
		if i == 0 || s != sorted[i-1] {
			out = append(out, s)
		}
	}
	return out
}

// PrivilegedWarning says what allow.privileged grants when a policy sets
// it, or "" when it does not. Windows ignores securityContext.privileged, so
// the flag is an allowance only where the cluster's own admission decides
// who may set it.
func PrivilegedWarning(spec *v1alpha1.PipeAccessPolicySpec) string {
	if spec.Allow.Privileged == nil || !*spec.Allow.Privileged {
		return ""
	}
	return "spec.allow.privileged is true, but Windows ignores securityContext.privileged (the kubelet passes it to no Windows container, " +
		"and the API server refuses it only on pods that declare spec.os.name: windows), so anyone who may create a pod can set it and get this allowance; " +
		"keep it only where your own admission decides who may set securityContext.privileged (Pod Security baseline or restricted forbids it), " +
		"or set it to false and allow HostProcess containers or namespaces instead"
}

// HostProcessWarning says what withholding the HostProcess allowance
// refuses, or "" when the policy allows HostProcess containers. A
// HostProcess container reaches every host pipe without a mount, so such a
// policy refuses every HostProcess pod outside the namespaces it allows,
// kube-proxy and CNI DaemonSets included, whatever they mount.
func HostProcessWarning(spec *v1alpha1.PipeAccessPolicySpec) string {
	if spec.Allow.HostProcess == nil || *spec.Allow.HostProcess {
		return ""
	}
	return "spec.allow.hostProcess is false: a HostProcess container reaches every host pipe without any mount, so every HostProcess pod " +
		"outside the namespaces this policy allows is refused (kube-proxy and CNI DaemonSets too), mounted or not; " +
		"allow their namespaces, or roll out with enforcementAction warn first"
}
