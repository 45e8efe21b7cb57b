package policy

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/pipeguard/pipeguard/api/v1alpha1"
)

// AllowLabel is the namespace label the default policy honours. Its name is
// part of pipeguard's contract with cluster admins.
const AllowLabel = "pipeguard.io/allow-csi-proxy"

// DefaultPolicyName names the built-in policy in messages.
const DefaultPolicyName = "pipeguard-default"

// CSIProxyPipes returns the pipes CSI Proxy serves, one per API group and
// version (`\\.\pipe\csi-proxy-<group>-<version>`). They decide whether
// the admin's policies cover what the built-in default protects (see
// Generation.Default). The slice is the caller's own.
func CSIProxyPipes() []string { return slices.Clone(csiProxyPipes) }

var csiProxyPipes = []string{
	"csi-proxy-disk-v1", "csi-proxy-disk-v1alpha1", "csi-proxy-disk-v1beta1", "csi-proxy-disk-v1beta2", "csi-proxy-disk-v1beta3",
	"csi-proxy-filesystem-v1", "csi-proxy-filesystem-v1alpha1", "csi-proxy-filesystem-v1beta1", "csi-proxy-filesystem-v1beta2", "csi-proxy-filesystem-v2alpha1",
	"csi-proxy-iscsi-v1alpha1", "csi-proxy-iscsi-v1alpha2",
	"csi-proxy-smb-v1", "csi-proxy-smb-v1alpha1", "csi-proxy-smb-v1beta1", "csi-proxy-smb-v1beta2",
	"csi-proxy-system-v1alpha1",
	"csi-proxy-volume-v1", "csi-proxy-volume-v1alpha1", "csi-proxy-volume-v1beta1", "csi-proxy-volume-v1beta2", "csi-proxy-volume-v1beta3", "csi-proxy-volume-v2alpha1",
}

// futureCSIProxyPipe stands for the pipes of API versions CSI Proxy does
// not serve yet: a policy that lists today's pipes one by one does not
// cover it, so the default keeps protecting what comes next.
const futureCSIProxyPipe = "csi-proxy-disk-v2"

// DefaultPolicy protects every CSI Proxy pipe, allows HostProcess
// containers and namespaces labelled pipeguard.io/allow-csi-proxy=true, and
// denies everything else. No namespace is allowed implicitly, and
// securityContext.privileged allows nothing: Windows ignores it, so any pod
// creator could set it.
//
// It is in force alone while no PipeAccessPolicy exists, and beside the
// admin's policies for every csi-proxy pipe none of them protects: a policy
// about other pipes never lifts the protection of CSI Proxy's.
func DefaultPolicy() v1alpha1.PipeAccessPolicy {
	yes, no := true, false
	return v1alpha1.PipeAccessPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: DefaultPolicyName},
		Spec: v1alpha1.PipeAccessPolicySpec{
			Pipes: []string{"csi-proxy*"},
			Allow: v1alpha1.Allowances{
				Privileged:  &no,
				HostProcess: &yes,
				NamespaceSelector: &metav1.LabelSelector{
					MatchLabels: map[string]string{AllowLabel: "true"},
				},
			},
			EnforcementAction: v1alpha1.Deny,
		},
	}
}

// DefaultProtection says what the built-in default protects in a
// generation.
type DefaultProtection struct {
	// InForce is true when the default takes part in decisions: always
	// when no PipeAccessPolicy exists, and otherwise while the policies in
	// force leave a CSI Proxy pipe (of CSIProxyPipes, or of a future API
	// version) unprotected.
	InForce bool
	// Alone is true when no PipeAccessPolicy exists.
	Alone bool
	// Pipes lists the pipes of CSIProxyPipes that only the default
	// protects, sorted; every one of them when it is alone.
	Pipes []string
}

// addDefault puts the built-in default into the generation beside the
// admin's policies (already in g.policies, sorted) when they leave a CSI
// Proxy pipe unprotected, or alone when there are none.
func (g *Generation) addDefault() error {
	var uncovered []string
	future := false
	for _, pipe := range append(CSIProxyPipes(), futureCSIProxyPipe) {
		if g.protectedByAdmin(pipe) {
			continue
		}
		if pipe == futureCSIProxyPipe {
			future = true
		} else {
			uncovered = append(uncovered, pipe)
		}
	}
	g.Default = DefaultProtection{Alone: len(g.policies) == 0, Pipes: uncovered}
	if len(uncovered) == 0 && !future {
		return nil
	}
	g.Default.InForce = true
	def := DefaultPolicy()
	cp, _, err := compilePolicy(&def)
	if err != nil {
		return fmt.Errorf("internal error: the built-in policy does not compile: %w", err)
	}
	cp.facts.Builtin = true
	cp.render()
	at := sort.Search(len(g.policies), func(i int) bool { return g.policies[i].facts.Name > DefaultPolicyName })
	g.policies = slices.Insert(g.policies, at, cp)
	g.Policies = slices.Insert(g.Policies, at, DefaultPolicyName)
	return nil
}

// protectedByAdmin reports whether a policy of the generation other than
// the built-in default protects pipe.
func (g *Generation) protectedByAdmin(pipe string) bool {
	for _, p := range g.policies {
		if !p.facts.Builtin && p.protects(pipe) {
			return true
		}
	}
	return false
}

// String says in a sentence what the built-in default protects, for logs
// and policy status.
func (d DefaultProtection) String() string {
	switch {
	case !d.InForce:
		return "the built-in default " + DefaultPolicyName + " is not in force: the policies cover every CSI Proxy pipe"
	case d.Alone:
		return "the built-in default " + DefaultPolicyName + " is in force alone: no PipeAccessPolicy exists"
	case len(d.Pipes) == len(csiProxyPipes):
		return "the built-in default " + DefaultPolicyName + " still protects every CSI Proxy pipe: no policy covers csi-proxy pipes"
	case len(d.Pipes) == 0:
		return "the built-in default " + DefaultPolicyName + " still protects csi-proxy pipes of future API versions (such as " + futureCSIProxyPipe + "): the policies list today's pipes only"
	}
	return fmt.Sprintf("the built-in default %s still protects the CSI Proxy pipes no policy covers: %s", DefaultPolicyName, strings.Join(d.Pipes, ", "))
}

// HostProcessWithheldBy names, sorted, the policies in force that withhold
// the HostProcess allowance. While there are any, a HostProcess container is
// decided as reaching their pipes, mounted or not, and so every HostProcess
// object must be reviewed; while there are none, no HostProcess object needs
// the webhook for being HostProcess.
func (g *Generation) HostProcessWithheldBy() []string {
	var out []string
	for _, p := range g.policies {
		if !p.facts.Allow.HostProcess {
			out = append(out, p.facts.Name)
		}
	}
	return out
}
