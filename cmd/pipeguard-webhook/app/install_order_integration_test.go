package app_test

import (
	"context"
	"os"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/yaml"

	"github.com/pipeguard/pipeguard/internal/testing/testenv"
	"github.com/pipeguard/pipeguard/policy"
)

// TestAgentNamespaceBeforeTheWebhookServes registers the shipped webhook
// configuration with no pipeguard-webhook serving it, as when config/agent is
// applied before the webhook is up. The cluster admin creates the agent's
// labelled Namespace (the admin may grant the allowance, so the namespace
// rule does not call the webhook); a namespace editor without that right
// still cannot add the allowance label: the call goes to the webhook, which
// is down, and fails closed.
func TestAgentNamespaceBeforeTheWebhookServes(t *testing.T) {
	env := testenv.Start(t, testenv.Options{
		Scheme:            scheme(t),
		CRDDirectoryPaths: []string{"../../../config/crd/bases"},
		Webhooks:          testenv.WebhookOptions{Paths: []string{"../../../config/webhook/manifests.yaml"}},
	})
	ctx := context.Background()
	data, err := os.ReadFile("../../../config/agent/namespace.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var agentNS corev1.Namespace
	if err := yaml.UnmarshalStrict(data, &agentNS); err != nil {
		t.Fatal(err)
	}
	if len(agentNS.Labels) == 0 {
		t.Fatal("config/agent/namespace.yaml has no labels: this test needs the labelled Namespace the agent ships")
	}
	if err := env.Client.Create(ctx, &agentNS); err != nil {
		t.Fatalf("the admin creating config/agent's Namespace while the webhook is not serving: %v", err)
	}

	// An editor of namespaces who may not grant the allowance.
	if err := env.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "team-a"}}); err != nil {
		t.Fatal(err)
	}
	role := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "namespace-editor"},
		Rules: []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"namespaces"}, Verbs: []string{"get", "create", "update", "patch"}}}}
	binding := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "namespace-editor"},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role.Name},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: "edna"}}}
	if err := env.Client.Create(ctx, role); err != nil {
		t.Fatal(err)
	}
	if err := env.Client.Create(ctx, binding); err != nil {
		t.Fatal(err)
	}
	edna, err := kubernetes.NewForConfig(env.UserConfig(t, "edna"))
	if err != nil {
		t.Fatal(err)
	}
	patch := []byte(`{"metadata":{"labels":{"` + policy.AllowLabel + `":"true"}}}`)
	_, err = edna.CoreV1().Namespaces().Patch(ctx, "team-a", types.MergePatchType, patch, metav1.PatchOptions{})
	if err == nil || !strings.Contains(err.Error(), "failed calling webhook") || !strings.Contains(err.Error(), "namespaces.pipeguard.io") {
		t.Fatalf("a namespace editor adding the allowance label while the webhook is down: %v, want the fail-closed webhook error", err)
	}
	_, err = edna.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "team-b", Labels: map[string]string{policy.AllowLabel: "true"}}}, metav1.CreateOptions{})
	if err == nil || !strings.Contains(err.Error(), "failed calling webhook") {
		t.Fatalf("a namespace editor creating a namespace with the allowance label while the webhook is down: %v, want the fail-closed webhook error", err)
	}
	got, err := edna.CoreV1().Namespaces().Get(ctx, "team-a", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := got.Labels[policy.AllowLabel]; ok {
		t.Fatalf("team-a got the allowance label: %v", got.Labels)
	}
}
