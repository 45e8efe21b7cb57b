package anchor_test

import (
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/pipeguard/pipeguard/agent/audit"
	"github.com/pipeguard/pipeguard/agent/audit/anchor"
	"github.com/pipeguard/pipeguard/agent/audit/review"
	"github.com/pipeguard/pipeguard/internal/testing/testenv"
)

// TestLookAlikeAnchorsElsewhereAreOrdinaryLeases plays a tenant who copies
// the agent's setup into their own namespace (a ServiceAccount named
// pipeguard-agent, a pod of it on node-x, a Role to write Leases) and
// creates team-a/pipeguard-audit-node-x with a token bound to that pod: the
// anchor policy binds only in the agent's namespace, so the Lease is an
// ordinary one, which the admin deletes, and verification never reads it.
func TestLookAlikeAnchorsElsewhereAreOrdinaryLeases(t *testing.T) {
	env := testenv.Start(t, testenv.Options{})
	admin := kubernetes.NewForConfigOrDie(env.Config)
	createNamespace(t, admin)
	installAgentConfig(t, admin)
	agentY := agentOn(t, env, admin, "node-y")
	waitForAnchorPolicy(t, admin, agentY)
	ctx := context.Background()

	const tenant = "team-a"
	objs := []func() error{
		func() error {
			_, err := admin.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: tenant}}, metav1.CreateOptions{})
			return err
		},
		func() error {
			_, err := admin.CoreV1().Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-x"}}, metav1.CreateOptions{})
			return err
		},
		func() error {
			_, err := admin.CoreV1().ServiceAccounts(tenant).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "pipeguard-agent"}}, metav1.CreateOptions{})
			return err
		},
		func() error {
			_, err := admin.RbacV1().Roles(tenant).Create(ctx, &rbacv1.Role{
				ObjectMeta: metav1.ObjectMeta{Name: "leases"},
				Rules:      []rbacv1.PolicyRule{{APIGroups: []string{"coordination.k8s.io"}, Resources: []string{"leases"}, Verbs: []string{"get", "create", "update"}}},
			}, metav1.CreateOptions{})
			return err
		},
		func() error {
			_, err := admin.RbacV1().RoleBindings(tenant).Create(ctx, &rbacv1.RoleBinding{
				ObjectMeta: metav1.ObjectMeta{Name: "leases"},
				RoleRef:    rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "Role", Name: "leases"},
				Subjects:   []rbacv1.Subject{{Kind: "ServiceAccount", Name: "pipeguard-agent", Namespace: tenant}},
			}, metav1.CreateOptions{})
			return err
		},
	}
	for _, create := range objs {
		if err := create(); err != nil {
			t.Fatal(err)
		}
	}
	lookAlike := podToken(t, env, admin, tenant, "pipeguard-agent", "node-x")

	if err := anchor.Write(ctx, lookAlike, tenant, anchorAt("node-x", 999999999999999999)); err != nil {
		t.Fatalf("the tenant creating its own Lease: %v", err)
	}
	// An ordinary Lease: its writer may even move it back.
	if err := anchor.Write(ctx, lookAlike, tenant, anchorAt("node-x", 5)); err != nil {
		t.Errorf("the tenant updating its own Lease: %v", err)
	}
	if _, err := review.ReadAnchor(ctx, admin, "", "node-x"); err == nil || !strings.Contains(err.Error(), "no audit anchor for node \"node-x\": Lease pipeguard-agent/pipeguard-audit-node-x does not exist") {
		t.Errorf("verification read the tenant's Lease as node-x's anchor: %v", err)
	}
	if err := admin.CoordinationV1().Leases(tenant).Delete(ctx, audit.AnchorLeaseName("node-x"), metav1.DeleteOptions{}); err != nil {
		t.Errorf("the admin deleting the tenant's look-alike Lease: %v", err)
	}

	// In the agent's namespace, the same name is guarded: the tenant's
	// token has no RBAC there, and node-x's real agent owns it.
	if err := anchor.Write(ctx, lookAlike, anchor.DefaultNamespace, anchorAt("node-x", 10)); err == nil {
		t.Error("the tenant's ServiceAccount wrote node-x's anchor in the agent's namespace")
	}
	if err := anchor.Write(ctx, agentY, anchor.DefaultNamespace, anchorAt("node-y", 1)); err != nil {
		t.Fatal(err)
	}
	err := admin.CoordinationV1().Leases(anchor.DefaultNamespace).Delete(ctx, audit.AnchorLeaseName("node-y"), metav1.DeleteOptions{})
	if err == nil || !strings.Contains(err.Error(), "the audit anchor of node node-y may not be deleted") {
		t.Errorf("the admin deleting a real anchor: %v", err)
	}
}
