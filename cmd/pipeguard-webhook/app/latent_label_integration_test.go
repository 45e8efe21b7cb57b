package app_test

import (
	"context"
	"strings"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/pipeguard/pipeguard/api/v1alpha1"
	"github.com/pipeguard/pipeguard/controller"
)

// unguardedRefusal is the start of the Ready message of a policy whose
// selector reads a label a tenant may set.
const unguardedRefusal = `the latest spec (generation 1) is not in force: spec.allow.namespaceSelector reads label `

// latentLabelGrant is the attack of a tenant who labels their namespace
// before any policy reads the label, hoping an admin's later policy selects
// it: whenever the policy is made (created, re-created, edited to read a
// new key), the label never lets the tenant's pipe pod in, and the policy
// says why in `kubectl get`. It runs inside TestWebhookOnControlPlane.
func latentLabelGrant(t *testing.T, c *cluster) {
	ctx := context.Background()
	// tina may do anything inside team-a, nothing else.
	c.mustCreate(t, &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "tenant-everything", Namespace: "team-a"},
		Rules: []rbacv1.PolicyRule{{APIGroups: []string{"*"}, Resources: []string{"*"}, Verbs: []string{"*"}}}})
	c.mustCreate(t, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "tina-everything", Namespace: "team-a"},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "tenant-everything"},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.UserKind, Name: "tina", APIGroup: rbacv1.GroupName}}})
	tina, err := kubernetes.NewForConfig(c.env.UserConfig(t, "tina"))
	if err != nil {
		t.Fatal(err)
	}
	label := func(labels string) error {
		_, err := tina.CoreV1().Namespaces().Patch(ctx, "team-a", types.MergePatchType,
			[]byte(`{"metadata":{"labels":`+labels+`}}`), metav1.PatchOptions{})
		return err
	}
	t.Cleanup(func() {
		_, err := c.clientset(t).CoreV1().Namespaces().Patch(ctx, "team-a", types.MergePatchType,
			[]byte(`{"metadata":{"labels":{"tier":null,"env":null}}}`), metav1.PatchOptions{})
		if err != nil {
			t.Error(err)
		}
	})

	// Before any policy reads them, tina sets the labels she hopes a
	// policy will read; the ones under pipeguard.io/ are refused at once.
	if err := label(`{"tier":"gold","env":"prod"}`); err != nil {
		t.Fatalf("tina could not set ordinary labels on her namespace: %v", err)
	}
	for _, key := range []string{"pipeguard.io/tier", "storage.pipeguard.io/tier"} {
		err := label(`{"` + key + `":"gold"}`)
		denied(t, err, `[namespace-allowance] user "tina" may not add, change or remove label `+key+` on namespace "team-a": such labels grant the namespace's pods access to protected host pipes, now or once a policy reads them; ask a cluster admin`)
	}

	stillDenied := func(t *testing.T) {
		t.Helper()
		denied(t, c.client.Create(ctx, pipePod("latent", "team-a"), client.DryRunAll),
			`container "driver" mounts \\.\pipe\csi-proxy-disk-v1 through volume "pipe", but it is not HostProcess and namespace "team-a" is not allowed`)
	}
	notInForce := func(t *testing.T, name, key string) {
		t.Helper()
		cond := waitReady(t, c, name, metav1.ConditionFalse, `spec.allow.namespaceSelector reads label "`+key+`", which anyone who may edit a namespace can set`)
		if cond.Reason != controller.ReasonUnguardedLabel {
			t.Errorf("Ready reason %q, want %q", cond.Reason, controller.ReasonUnguardedLabel)
		}
		row := c.tableRow(t, name)
		if row["Ready"] != "False" || row["Reason"] != "UnguardedLabel" || !strings.Contains(row["Message"], `select only labels under pipeguard.io/`) {
			t.Errorf("kubectl get shows %v, want Ready False, Reason UnguardedLabel and the way out", row)
		}
		stillDenied(t)
	}
	gold := func(sel *metav1.LabelSelector) *v1alpha1.PipeAccessPolicy {
		return &v1alpha1.PipeAccessPolicy{ObjectMeta: metav1.ObjectMeta{Name: "gold"}, Spec: v1alpha1.PipeAccessPolicySpec{
			Pipes: []string{"csi-proxy-*"}, Allow: v1alpha1.Allowances{NamespaceSelector: sel}}}
	}
	byTier := &metav1.LabelSelector{MatchLabels: map[string]string{"tier": "gold"}}
	byEnv := &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{
		{Key: "env", Operator: metav1.LabelSelectorOpIn, Values: []string{"prod"}}}}
	deletePolicy := func(t *testing.T, name string) {
		t.Helper()
		if err := c.client.Delete(ctx, &v1alpha1.PipeAccessPolicy{ObjectMeta: metav1.ObjectMeta{Name: name}}); err != nil {
			t.Fatal(err)
		}
	}

	t.Run("matchLabels", func(t *testing.T) {
		c.mustCreate(t, gold(byTier))
		cond := waitReady(t, c, "gold", metav1.ConditionFalse, "")
		want := unguardedRefusal + `"tier", which anyone who may edit a namespace can set, whenever they set it; select only labels under pipeguard.io/ (for example "pipeguard.io/tier"), which only users with the "grant" verb on pipeaccesspolicies.pipeguard.io may set, or kubernetes.io/metadata.name, or list the namespaces in spec.allow.namespaces; no version of this policy is in force; fix the error to enforce it`
		if !strings.HasPrefix(cond.Message, want) {
			t.Errorf("Ready message\n%q\nwant it to start with\n%q", cond.Message, want)
		}
		notInForce(t, "gold", "tier")
	})
	t.Run("deleted and re-created", func(t *testing.T) {
		deletePolicy(t, "gold")
		c.mustCreate(t, gold(byTier))
		notInForce(t, "gold", "tier")
		deletePolicy(t, "gold")
	})
	t.Run("matchExpressions", func(t *testing.T) {
		c.mustCreate(t, gold(byEnv))
		notInForce(t, "gold", "env")
		deletePolicy(t, "gold")
	})
	t.Run("a policy in force edited to read a new key", func(t *testing.T) {
		c.mustCreate(t, gold(&metav1.LabelSelector{MatchLabels: map[string]string{"pipeguard.io/tier": "gold"}}))
		waitReady(t, c, "gold", metav1.ConditionTrue, "")
		stillDenied(t) // team-a has no pipeguard.io/tier label
		for _, sel := range []*metav1.LabelSelector{byEnv, byTier} {
			c.updatePolicy(t, "gold", func(p *v1alpha1.PipeAccessPolicy) { p.Spec.Allow.NamespaceSelector = sel })
			cond := waitReady(t, c, "gold", metav1.ConditionFalse, "spec.allow.namespaceSelector reads label")
			if cond.Reason != controller.ReasonUnguardedLabel || !strings.Contains(cond.Message, "generation 1 of this policy stays in force") {
				t.Errorf("Ready %s %q, want %s and the version in force", cond.Reason, cond.Message, controller.ReasonUnguardedLabel)
			}
			stillDenied(t)
		}
		deletePolicy(t, "gold")
	})
	t.Run("a negative selector is in force with a warning", func(t *testing.T) {
		c.mustCreate(t, &v1alpha1.PipeAccessPolicy{ObjectMeta: metav1.ObjectMeta{Name: "not-bronze"}, Spec: v1alpha1.PipeAccessPolicySpec{
			Pipes: []string{"docker_engine"},
			Allow: v1alpha1.Allowances{NamespaceSelector: &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{
				{Key: "pipeguard.io/tier", Operator: metav1.LabelSelectorOpNotIn, Values: []string{"bronze"}}}}},
		}})
		cond := waitReady(t, c, "not-bronze", metav1.ConditionTrue, "")
		want := `warning: spec.allow.namespaceSelector "pipeguard.io/tier notin (bronze)" also matches a namespace without any pipeguard.io/ label, so it allows every namespace created from now on: whoever may create a namespace gets this allowance; generation 1 of this policy is in force`
		if !strings.HasPrefix(cond.Message, want) {
			t.Errorf("Ready message\n%q\nwant it to start with\n%q", cond.Message, want)
		}
		deletePolicy(t, "not-bronze")
	})
	stillDenied(t)
}

func (c *cluster) clientset(t *testing.T) kubernetes.Interface {
	t.Helper()
	cs, err := kubernetes.NewForConfig(c.env.Config)
	if err != nil {
		t.Fatal(err)
	}
	return cs
}
