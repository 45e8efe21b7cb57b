package anchor_test

import (
	"bytes"
	"context"
	"os"
	"strings"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/yaml"

	"github.com/pipeguard/pipeguard/agent/audit"
	"github.com/pipeguard/pipeguard/agent/audit/anchor"
	"github.com/pipeguard/pipeguard/agent/audit/review"
	"github.com/pipeguard/pipeguard/internal/testing/testenv"
)

// installAgentConfig applies the agent's RBAC and anchor policy from
// config/agent, as kubectl apply -k would.
func installAgentConfig(t *testing.T, c kubernetes.Interface) {
	t.Helper()
	ctx := context.Background()
	for _, file := range []string{"../../../config/agent/rbac.yaml", "../../../config/agent/anchor-policy.yaml"} {
		b, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		for _, doc := range bytes.Split(b, []byte("\n---\n")) {
			var meta metav1.TypeMeta
			if err := yaml.Unmarshal(doc, &meta); err != nil {
				t.Fatalf("%s: %v", file, err)
			}
			switch meta.Kind {
			case "ServiceAccount":
				var o corev1.ServiceAccount
				mustDecode(t, doc, &o)
				_, err = c.CoreV1().ServiceAccounts(o.Namespace).Create(ctx, &o, metav1.CreateOptions{})
			case "ClusterRole":
				var o rbacv1.ClusterRole
				mustDecode(t, doc, &o)
				_, err = c.RbacV1().ClusterRoles().Create(ctx, &o, metav1.CreateOptions{})
			case "ClusterRoleBinding":
				var o rbacv1.ClusterRoleBinding
				mustDecode(t, doc, &o)
				_, err = c.RbacV1().ClusterRoleBindings().Create(ctx, &o, metav1.CreateOptions{})
			case "Role":
				var o rbacv1.Role
				mustDecode(t, doc, &o)
				_, err = c.RbacV1().Roles(o.Namespace).Create(ctx, &o, metav1.CreateOptions{})
			case "RoleBinding":
				var o rbacv1.RoleBinding
				mustDecode(t, doc, &o)
				_, err = c.RbacV1().RoleBindings(o.Namespace).Create(ctx, &o, metav1.CreateOptions{})
			case "ValidatingAdmissionPolicy":
				var o admissionregistrationv1.ValidatingAdmissionPolicy
				mustDecode(t, doc, &o)
				_, err = c.AdmissionregistrationV1().ValidatingAdmissionPolicies().Create(ctx, &o, metav1.CreateOptions{})
			case "ValidatingAdmissionPolicyBinding":
				var o admissionregistrationv1.ValidatingAdmissionPolicyBinding
				mustDecode(t, doc, &o)
				_, err = c.AdmissionregistrationV1().ValidatingAdmissionPolicyBindings().Create(ctx, &o, metav1.CreateOptions{})
			default:
				t.Fatalf("%s: unexpected kind %q", file, meta.Kind)
			}
			if err != nil {
				t.Fatalf("%s: creating %s: %v", file, meta.Kind, err)
			}
		}
	}
}

func mustDecode(t *testing.T, doc []byte, into any) {
	t.Helper()
	if err := yaml.UnmarshalStrict(doc, into); err != nil {
		t.Fatal(err)
	}
}

// agentOn runs a pod of the agent's ServiceAccount on a new node and
// returns a client with a token bound to that pod, as the kubelet gives
// the agent: the API server adds the node's name to its user's extra.
func agentOn(t *testing.T, env *testenv.Env, c kubernetes.Interface, nodeName string) kubernetes.Interface {
	t.Helper()
	if _, err := c.CoreV1().Nodes().Create(context.Background(), &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: nodeName}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	return podToken(t, env, c, anchor.DefaultNamespace, "pipeguard-agent", nodeName)
}

// podToken runs a pod of ServiceAccount sa on node nodeName and returns a
// client with a token bound to that pod.
func podToken(t *testing.T, env *testenv.Env, c kubernetes.Interface, ns, sa, nodeName string) kubernetes.Interface {
	t.Helper()
	pod, err := c.CoreV1().Pods(ns).Create(context.Background(), &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: sa + "-" + nodeName},
		Spec: corev1.PodSpec{
			NodeName: nodeName, ServiceAccountName: sa,
			Containers: []corev1.Container{{Name: "agent", Image: "ghcr.io/pipeguard/pipeguard-agent:dev"}},
		},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return saToken(t, env, c, ns, sa, &authenticationv1.BoundObjectReference{Kind: "Pod", APIVersion: "v1", Name: pod.Name, UID: pod.UID})
}

func tokenClient(t *testing.T, env *testenv.Env, c kubernetes.Interface, bound *authenticationv1.BoundObjectReference) kubernetes.Interface {
	t.Helper()
	return saToken(t, env, c, anchor.DefaultNamespace, "pipeguard-agent", bound)
}

// saToken mints a token of ServiceAccount ns/sa with c's credentials, bound
// to bound (nil: to nothing), and returns a client that uses it.
func saToken(t *testing.T, env *testenv.Env, c kubernetes.Interface, ns, sa string, bound *authenticationv1.BoundObjectReference) kubernetes.Interface {
	t.Helper()
	tr, err := c.CoreV1().ServiceAccounts(ns).CreateToken(context.Background(), sa,
		&authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{BoundObjectRef: bound}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("requesting a token of %s/%s: %v", ns, sa, err)
	}
	cfg := rest.AnonymousClientConfig(env.Config)
	cfg.BearerToken = tr.Status.Token
	return kubernetes.NewForConfigOrDie(cfg)
}

// waitForAnchorPolicy waits until the API server has loaded the anchor
// policy: until a write it forbids, by another node's agent, is refused,
// rather than for a fixed time.
func waitForAnchorPolicy(t *testing.T, admin, otherNodesAgent kubernetes.Interface) {
	t.Helper()
	ctx := context.Background()
	deadline := time.Now().Add(time.Minute)
	for {
		err := anchor.Write(ctx, otherNodesAgent, anchor.DefaultNamespace, anchorAt("probe", 1))
		if err != nil && strings.Contains(err.Error(), "may be written only by the agent on that node") {
			return
		}
		if err == nil {
			_ = admin.CoordinationV1().Leases(anchor.DefaultNamespace).Delete(ctx, audit.AnchorLeaseName("probe"), metav1.DeleteOptions{})
		}
		if time.Now().After(deadline) {
			t.Fatalf("the anchor policy never took effect; last write: %v", err)
		}
		// Poll under the deadline above for the policy to take effect; the pause only spares the CPU.
		time.Sleep(200 * time.Millisecond)
	}
}

func anchorAt(n string, seq uint64) audit.Anchor {
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	return audit.Anchor{Node: n, Head: audit.Head{Seq: seq, Hash: audit.Link(audit.Genesis(), []byte{byte(seq)}), File: "audit.log"}, Time: now, AgentStart: now}
}

// TestOnlyTheNodesAgentAdvancesItsAnchor checks, on a real kube-apiserver
// with config/agent's RBAC and ValidatingAdmissionPolicy, that an anchor is
// written only by the agent on its node and never goes backwards.
func TestOnlyTheNodesAgentAdvancesItsAnchor(t *testing.T) {
	env := testenv.Start(t, testenv.Options{})
	admin := kubernetes.NewForConfigOrDie(env.Config)
	createNamespace(t, admin)
	installAgentConfig(t, admin)
	agentX := agentOn(t, env, admin, "node-x")
	agentY := agentOn(t, env, admin, "node-y")
	unbound := tokenClient(t, env, admin, nil)
	ctx := context.Background()
	ns := anchor.DefaultNamespace

	waitForAnchorPolicy(t, admin, agentY)

	steps := []struct {
		name   string
		client kubernetes.Interface
		seq    uint64
		want   string // empty: allowed
	}{
		{"another node's agent cannot create X's anchor", agentY, 10, "ValidatingAdmissionPolicy 'pipeguard-audit-anchor' with binding 'pipeguard-audit-anchor' denied request: the audit anchor of node node-x may be written only by the agent on that node; this request comes from node node-y"},
		{"a token not bound to a pod cannot create X's anchor", unbound, 10, "the audit anchor of node node-x may be written only by the agent on that node; this request comes from a token not bound to a pod on a node"},
		{"the cluster admin cannot create X's anchor", admin, 10, "the audit anchor of node node-x is written only by the pipeguard-agent ServiceAccount, not by"},
		{"X's agent creates its anchor", agentX, 10, ""},
		{"another node's agent cannot advance X's anchor", agentY, 20, "may be written only by the agent on that node; this request comes from node node-y"},
		{"another node's agent cannot rewind X's anchor", agentY, 5, "may be written only by the agent on that node; this request comes from node node-y"},
		{"the cluster admin cannot rewind X's anchor", admin, 5, "is written only by the pipeguard-agent ServiceAccount"},
		{"X's agent cannot rewind its anchor", agentX, 5, "the audit anchor of node node-x may not go backwards: seq 5 is below the anchored seq 10"},
		{"X's agent advances its anchor", agentX, 20, ""},
		{"X's agent with a token bound to node X, as a Windows service has, writes it", nodeToken(t, env, admin, "node-x"), 20, ""},
		{"X's agent may publish the same head again", agentX, 20, ""},
	}
	for _, s := range steps {
		err := anchor.Write(ctx, s.client, ns, anchorAt("node-x", s.seq))
		switch {
		case s.want == "" && err != nil:
			t.Errorf("%s: refused: %v", s.name, err)
		case s.want != "" && err == nil:
			t.Errorf("%s: allowed", s.name)
		case s.want != "" && !strings.Contains(err.Error(), s.want):
			t.Errorf("%s: refused with %q, want %q", s.name, err, s.want)
		}
	}

	a, err := review.ReadAnchor(ctx, admin, ns, "node-x")
	if err != nil || a.Seq != 20 {
		t.Fatalf("anchor after the writes: %v, %v; want seq 20", a, err)
	}

	// Nobody deletes an anchor: not its agent (RBAC), not the admin (policy).
	err = agentX.CoordinationV1().Leases(ns).Delete(ctx, audit.AnchorLeaseName("node-x"), metav1.DeleteOptions{})
	if !apierrors.IsForbidden(err) {
		t.Errorf("X's agent deleting its anchor: %v, want forbidden", err)
	}
	err = admin.CoordinationV1().Leases(ns).Delete(ctx, audit.AnchorLeaseName("node-x"), metav1.DeleteOptions{})
	if err == nil || !strings.Contains(err.Error(), "the audit anchor of node node-x may not be deleted") {
		t.Errorf("the admin deleting X's anchor: %v", err)
	}
	// An anchor that says it belongs to another node is refused.
	bad := anchorAt("node-x", 30)
	bad.Node = "node-y"
	l, err := agentX.CoordinationV1().Leases(ns).Get(ctx, audit.AnchorLeaseName("node-x"), metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	l.Annotations = bad.Annotations()
	_, err = agentX.CoordinationV1().Leases(ns).Update(ctx, l, metav1.UpdateOptions{})
	if err == nil || !strings.Contains(err.Error(), "needs the annotation audit.pipeguard.io/node set to node-x") {
		t.Errorf("X's agent labelling its anchor as node-y's: %v", err)
	}
}
