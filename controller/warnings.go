package controller

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/pipeguard/pipeguard/api/v1alpha1"
	"github.com/pipeguard/pipeguard/internal/invisible"
	"github.com/pipeguard/pipeguard/policy"
)

// MaxServiceAccountChecks bounds the ServiceAccounts one policy's warnings
// look up (one GET each, per named namespace and named ServiceAccount);
// pairs beyond it go unchecked.
const MaxServiceAccountChecks = 64

// ServiceAccountCaveat is the clause of the Ready message of every policy
// in force that sets spec.allow.serviceAccounts: the field decides which
// pods get the allowance, and the API server lets anyone who may create
// pods in a namespace run them as any of its ServiceAccounts.
const ServiceAccountCaveat = "spec.allow.serviceAccounts narrows which pods of an allowed namespace get this allowance, not who gets it: " +
	"anyone who may create pods in such a namespace may run them as any of its ServiceAccounts, and a workload there may name one that does not exist yet"

// warnings lists what a policy in force grants beyond what its spec seems
// to say, and what its rules did that admins must know (its admin rules
// ran out of time, so reviews failed closed), each a clause for the start
// of its Ready message; the policy stays in force either way. recheck is
// true when a clause may go away with nothing the controller watches
// changing (a ServiceAccount that does not exist yet, a lookup that
// failed), so that it looks again later; namespaces that come and go are
// watched.
func (c *Controller) warnings(ctx context.Context, p *v1alpha1.PipeAccessPolicy) (ws []string, recheck bool) {
	for _, w := range []string{policy.PrivilegedWarning(&p.Spec), policy.HostProcessWarning(&p.Spec), policy.SelectorWarning(&p.Spec)} {
		if w != "" {
			ws = append(ws, w)
		}
	}
	existing, missing, recheck := c.namedNamespaces(ctx, p.Spec.Allow.Namespaces)
	if w := missingNamespacesWarning(missing); w != "" {
		ws = append(ws, w)
	}
	if len(p.Spec.Allow.ServiceAccounts) > 0 {
		ws = append(ws, ServiceAccountCaveat)
		absent, saRecheck := c.missingServiceAccounts(ctx, existing, p.Spec.Allow.ServiceAccounts)
		ws = append(ws, absent...)
		recheck = recheck || saRecheck
	}
	if c.opts.Engine != nil {
		if w := c.opts.Engine.AdminRuleWarning(p.Name, p.Generation); w != "" {
			ws = append(ws, w)
		}
	}
	for i := range ws {
		ws[i] = invisible.Escape(ws[i])
	}
	return ws, recheck
}

// namedNamespaces sorts the namespaces a policy allows by name into those
// that exist and those that do not, reading the manager's namespace cache.
// Names that are not valid namespace names are neither: no namespace can
// ever have them. failed is true when a lookup failed.
func (c *Controller) namedNamespaces(ctx context.Context, names []string) (existing, missing []string, failed bool) {
	for _, name := range sortedUnique(names) {
		if len(validation.IsDNS1123Label(name)) > 0 {
			continue
		}
		ns := &metav1.PartialObjectMetadata{}
		ns.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("Namespace"))
		switch err := c.opts.Client.Get(ctx, client.ObjectKey{Name: name}, ns); {
		case err == nil:
			existing = append(existing, name)
		case apierrors.IsNotFound(err):
			missing = append(missing, name)
		default:
			failed = true
			logr.FromContextOrDiscard(ctx).Error(err, "cannot tell whether an allowed namespace exists", "allowedNamespace", name)
		}
	}
	return existing, missing, failed
}

// missingNamespacesWarning says that the allowance of namespaces that do
// not exist goes to whoever creates them, or "" when there are none.
func missingNamespacesWarning(missing []string) string {
	switch len(missing) {
	case 0:
		return ""
	case 1:
		return fmt.Sprintf("spec.allow.namespaces names namespace %q, which does not exist: whoever creates namespace %q first gets this allowance; "+
			"create it now, or remove it from spec.allow.namespaces", missing[0], missing[0])
	}
	list := quotedList(missing)
	return fmt.Sprintf("spec.allow.namespaces names namespaces %s, which do not exist: whoever creates one of them first gets this allowance there; "+
		"create them now, or remove them from spec.allow.namespaces", list)
}

// missingServiceAccounts looks up each named ServiceAccount in each
// existing named namespace, one GET each (at most
// MaxServiceAccountChecks), and says, one clause per namespace, which do
// not exist, and how many it did not look up. recheck is true when one
// does not exist, or a lookup failed.
func (c *Controller) missingServiceAccounts(ctx context.Context, namespaces, accounts []string) (ws []string, recheck bool) {
	reader := c.opts.APIReader
	if reader == nil {
		reader = c.opts.Client
	}
	var valid []string
	for _, name := range sortedUnique(accounts) {
		if len(validation.IsDNS1123Subdomain(name)) == 0 {
			valid = append(valid, name)
		}
	}
	checks := 0
	for _, ns := range namespaces {
		var absent []string
		for _, name := range valid {
			if checks == MaxServiceAccountChecks {
				break
			}
			checks++
			sa := &metav1.PartialObjectMetadata{}
			sa.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("ServiceAccount"))
			switch err := reader.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, sa); {
			case err == nil:
			case apierrors.IsNotFound(err):
				absent = append(absent, name)
				recheck = true
			default:
				recheck = true
				logr.FromContextOrDiscard(ctx).Error(err, "cannot tell whether an allowed ServiceAccount exists", "allowedNamespace", ns, "serviceAccount", name)
			}
		}
		switch len(absent) {
		case 0:
		case 1:
			ws = append(ws, fmt.Sprintf("ServiceAccount %q does not exist in namespace %q: a workload there may name it now, and its pods get this allowance "+
				"once anyone who may create ServiceAccounts there creates it; create it now, or remove it from spec.allow.serviceAccounts", absent[0], ns))
		default:
			ws = append(ws, fmt.Sprintf("ServiceAccounts %s do not exist in namespace %q: a workload there may name them now, and its pods get this allowance "+
				"once anyone who may create ServiceAccounts there creates them; create them now, or remove them from spec.allow.serviceAccounts", quotedList(absent), ns))
		}
	}
	if skipped := len(namespaces)*len(valid) - checks; skipped > 0 {
		ws = append(ws, fmt.Sprintf("%d more pairs of a namespace of spec.allow.namespaces and a ServiceAccount of spec.allow.serviceAccounts were not looked up "+
			"(pipeguard looks up at most %d per policy), so whether those ServiceAccounts exist is not known", skipped, MaxServiceAccountChecks))
	}
	return ws, recheck
}

func sortedUnique(s []string) []string {
	out := slices.Clone(s)
	slices.Sort(out)
	return slices.Compact(out)
}

// MaxNamed is how many names one warning lists; it counts the rest, so
// that the Ready message keeps room for what is in force.
const MaxNamed = 20

// quotedList renders names as `"a", "b" and "c"`, or the first MaxNamed
// and how many more.
func quotedList(names []string) string {
	shown := names[:min(len(names), MaxNamed)]
	q := make([]string, len(shown))
	for i, n := range shown {
		q[i] = fmt.Sprintf("%q", n)
	}
	if more := len(names) - len(shown); more > 0 {
		return strings.Join(q, ", ") + fmt.Sprintf(" and %d more", more)
	}
	if len(q) == 1 {
		return q[0]
	}
	return strings.Join(q[:len(q)-1], ", ") + " and " + q[len(q)-1]
}
