package app_test

import (
	"context"
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/pipeguard/pipeguard/internal/testing/testenv"
	"github.com/pipeguard/pipeguard/policy"
)

// TestOutageRefusesOnlyGuardedLabelChanges registers the shipped webhook
// configuration with nothing serving it. A user who may edit namespaces
// but not grant changes Pod Security's label through every way of writing
// a Namespace's labels, and is admitted: only the labels under
// pipeguard.io/ wait for the webhook. Setting, changing or removing one of
// those is refused (failurePolicy Fail) on every one of those ways.
func TestOutageRefusesOnlyGuardedLabelChanges(t *testing.T) {
	env := testenv.Start(t, testenv.Options{
		Scheme:            scheme(t),
		CRDDirectoryPaths: []string{"../../../config/crd/bases"},
		Webhooks:          testenv.WebhookOptions{Paths: []string{"../../../config/webhook/manifests.yaml"}},
	})
	ctx := context.Background()
	// The cluster admin is a granter: the API server does not call the
	// webhook for them, so they can set guarded labels during the outage.
	admin, err := kubernetes.NewForConfig(env.Config)
	if err != nil {
		t.Fatal(err)
	}
	mustCreate(t, env.Client,
		&rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "namespace-editor"}, Rules: []rbacv1.PolicyRule{
			{APIGroups: []string{""}, Resources: []string{"namespaces"}, Verbs: []string{"get", "list", "create", "update", "patch"}},
			{APIGroups: []string{""}, Resources: []string{"namespaces/status", "namespaces/finalize"}, Verbs: []string{"get", "update", "patch"}},
		}},
		&rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "edna-namespace-editor"},
			RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "namespace-editor"},
			Subjects: []rbacv1.Subject{{Kind: rbacv1.UserKind, Name: "edna", APIGroup: rbacv1.GroupName}}})
	edna, err := kubernetes.NewForConfig(env.UserConfig(t, "edna"))
	if err != nil {
		t.Fatal(err)
	}
	const (
		enforce = "pod-security.kubernetes.io/enforce"
		tier    = "storage.pipeguard.io/tier"
		hook    = "namespaces.pipeguard.io"
	)
	levels := []string{"baseline", "restricted", "privileged"}
	for i, p := range labelPaths() {
		name := fmt.Sprintf("outage-%d", i)
		if p.create {
			for j, level := range levels {
				ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("%s-%d", name, j)}}
				if err := p.write(ctx, edna, ns, map[string]*string{enforce: &level}); err != nil {
					t.Errorf("%s of a namespace with %s=%s refused while the webhook is down: %v", p.name, enforce, level, err)
				}
			}
			ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name + "-allowed"}}
			refusedByOutage(t, p.name+" of a namespace with "+policy.AllowLabel, p.write(ctx, edna, ns, map[string]*string{policy.AllowLabel: ptr("true")}), hook)
			ns.Name = name + "-tier"
			refusedByOutage(t, p.name+" of a namespace with "+tier, p.write(ctx, edna, ns, map[string]*string{tier: ptr("gold")}), hook)
			continue
		}
		if _, err := admin.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name,
			Labels: map[string]string{tier: "gold"}}}, metav1.CreateOptions{}); err != nil {
			t.Fatalf("a granter creating namespace %s with %s while the webhook is down: %v", name, tier, err)
		}
		get := func() *corev1.Namespace {
			t.Helper()
			ns, err := admin.CoreV1().Namespaces().Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			return ns
		}
		for _, level := range levels {
			if err := p.write(ctx, edna, get(), map[string]*string{enforce: &level}); err != nil {
				t.Errorf("%s setting %s=%s refused while the webhook is down: %v", p.name, enforce, level, err)
			} else if got := get().Labels[enforce]; got != level {
				t.Errorf("%s setting %s=%s was admitted, but the label is %q", p.name, enforce, level, got)
			}
		}
		refusedByOutage(t, p.name+" adding "+policy.AllowLabel+"=true", p.write(ctx, edna, get(), map[string]*string{policy.AllowLabel: ptr("true")}), hook)
		refusedByOutage(t, p.name+" changing "+tier, p.write(ctx, edna, get(), map[string]*string{tier: ptr("silver")}), hook)
		if p.name != "server-side apply" && p.name != "server-side apply status" {
			// Server-side apply removes only labels its field manager owns.
			refusedByOutage(t, p.name+" removing "+tier, p.write(ctx, edna, get(), map[string]*string{tier: nil}), hook)
		}
		if got := get().Labels; got[tier] != "gold" || got[policy.AllowLabel] != "" {
			t.Errorf("%s: the guarded labels changed during the outage: %v", p.name, got)
		}
	}
}
