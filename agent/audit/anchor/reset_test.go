package anchor_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/pipeguard/pipeguard/agent/audit"
	"github.com/pipeguard/pipeguard/agent/audit/anchor"
	"github.com/pipeguard/pipeguard/agent/audit/review"
	"github.com/pipeguard/pipeguard/internal/testing/testenv"
)

const (
	denied       = "ValidatingAdmissionPolicy 'pipeguard-audit-anchor' with binding 'pipeguard-audit-anchor' denied request: "
	poison       = 999999999999999999
	resetReason  = "pushed to seq 999999999999999999 with a stolen agent token; INC-4711"
	notAPerson   = ": the credentials of ServiceAccounts and nodes are on the nodes, where whoever the anchor guards against is"
	recoveryRole = "pipeguard-audit-anchor-recovery"
)

// TestAPoisonedAnchorIsResetOnlyByTheRecoveryRole poisons node-x's anchor
// with a token minted for its agent, as anyone who may create
// serviceaccounts/token in the agent's namespace can, and recovers it as
// docs/audit.md says: only a person holding the recovery role resets it,
// with the reason and their name on the Lease; neither the agent nor any
// node or ServiceAccount credential can, even when bound to the role. The
// agent then anchors again from its own head, and verification reports
// the reset; the API server's audit log names the reset.
func TestAPoisonedAnchorIsResetOnlyByTheRecoveryRole(t *testing.T) {
	dir := t.TempDir()
	auditPolicy := filepath.Join(dir, "audit-policy.yaml")
	apiAudit := filepath.Join(dir, "kube-apiserver-audit.log")
	if err := os.WriteFile(auditPolicy, []byte(`apiVersion: audit.k8s.io/v1
kind: Policy
rules:
- level: Metadata
  resources: [{group: coordination.k8s.io, resources: [leases]}]
- level: None
`), 0o600); err != nil {
		t.Fatal(err)
	}
	env := testenv.Start(t, testenv.Options{APIServerArgs: map[string][]string{"audit-policy-file": {auditPolicy}, "audit-log-path": {apiAudit}}})
	admin := kubernetes.NewForConfigOrDie(env.Config)
	createNamespace(t, admin)
	installAgentConfig(t, admin)
	agentX := agentOn(t, env, admin, "node-x")
	agentY := agentOn(t, env, admin, "node-y")
	waitForAnchorPolicy(t, admin, agentY)
	ctx := context.Background()
	ns := anchor.DefaultNamespace
	leaseName := audit.AnchorLeaseName("node-x")

	// node-x's agent anchors its log.
	logPath := filepath.Join(dir, "audit.log")
	l, err := audit.Open(audit.Options{Path: logPath, Log: logr.Discard()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = l.Close() })
	appendRecords := func(n int) {
		t.Helper()
		for i := 0; i < n; i++ {
			if err := l.Append(request(i), true); err != nil {
				t.Fatal(err)
			}
		}
	}
	pub, err := anchor.New(anchor.Options{Client: agentX, Node: "node-x", Head: l.Head, Log: logr.Discard()})
	if err != nil {
		t.Fatal(err)
	}
	appendRecords(5)
	if err := pub.Publish(ctx); err != nil {
		t.Fatalf("the agent anchoring: %v", err)
	}

	// The attack: mallory may only mint tokens in the agent's namespace.
	mallory := userClient(t, env, "mallory")
	grant(t, admin, "mallory-tokens", rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"serviceaccounts/token"}, Verbs: []string{"create"}},
		rbacv1.Subject{Kind: "User", Name: "mallory"})
	pod, err := admin.CoreV1().Pods(ns).Get(ctx, "pipeguard-agent-node-x", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	stolen := saToken(t, env, mallory, ns, "pipeguard-agent", &authenticationv1.BoundObjectReference{Kind: "Pod", APIVersion: "v1", Name: pod.Name, UID: pod.UID})
	if err := anchor.Write(ctx, stolen, ns, anchorAt("node-x", poison)); err != nil {
		t.Fatalf("poisoning the anchor with a minted agent token: %v", err)
	}

	appendRecords(2)
	head, err := l.Head()
	if err != nil {
		t.Fatal(err)
	}
	want := denied + "the audit anchor of node node-x may not go backwards: seq " + itoa(head.Seq) + " is below the anchored seq 999999999999999999; if the agent can no longer anchor, reset the anchor (docs/audit.md)"
	if err := pub.Publish(ctx); err == nil || !strings.HasSuffix(err.Error(), want) {
		t.Fatalf("the agent anchoring after the poisoning: %v\nwant %s", err, want)
	}
	rep := verify(t, admin, logPath)
	if rep.OK() || !strings.HasPrefix(rep.Problems[0].Msg, "the chain ends at record seq "+itoa(head.Seq)+", before the anchored record seq 999999999999999999: records seq") {
		t.Fatalf("verifying against the poisoned anchor: ok=%v %v", rep.OK(), rep.Problems)
	}

	// Who is refused a reset, and why.
	opsAdmin := userClient(t, env, "ops-admin")
	grant(t, admin, "ops-admin-leases", rbacv1.PolicyRule{APIGroups: []string{"coordination.k8s.io"}, Resources: []string{"leases"}, Verbs: []string{"*"}},
		rbacv1.Subject{Kind: "User", Name: "ops-admin"})
	agentXNode := nodeToken(t, env, admin, "node-x")
	bot := "anchor-recovery-bot"
	if _, err := admin.CoreV1().ServiceAccounts(ns).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: bot}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	botClient := saToken(t, env, admin, ns, bot, nil)
	kubelet := userClient(t, env, "system:node:node-x", "system:nodes")
	alice := userClient(t, env, "alice")
	bindRecovery(t, admin,
		rbacv1.Subject{Kind: "ServiceAccount", Name: "pipeguard-agent", Namespace: ns},
		rbacv1.Subject{Kind: "ServiceAccount", Name: bot, Namespace: ns},
		rbacv1.Subject{Kind: "User", Name: "system:node:node-x"},
		rbacv1.Subject{Kind: "User", Name: "alice"})
	agentUser := "system:serviceaccount:pipeguard-agent:pipeguard-agent"

	refusals := []struct {
		name   string
		client kubernetes.Interface
		do     func(c kubernetes.Interface) error
		want   string
	}{
		{"an admin with every verb on Leases but not the recovery role cannot reset", opsAdmin, resetAs("ops-admin", true),
			"ops-admin may not reset the audit anchor of node node-x: that takes the verb reset on auditanchors.audit.pipeguard.io, which the ClusterRole pipeguard-audit-anchor-recovery grants"},
		{"that admin cannot delete the anchor", opsAdmin, deleteAnchor,
			"the audit anchor of node node-x may not be deleted: verification against it is what finds a cut or rewritten audit log; to recover an anchor the agent can no longer advance, reset it (docs/audit.md)"},
		{"that admin cannot write the seq back", opsAdmin, writeSeq(5),
			"the audit anchor of node node-x is written only by the pipeguard-agent ServiceAccount, not by ops-admin"},
		{"the agent's own token cannot reset, though bound to the role", agentX, resetAs(agentUser, true),
			"the audit anchor of node node-x may be reset only by a person, not by " + agentUser + " with a token bound to node node-x" + notAPerson},
		{"the agent's token bound to its node cannot reset", agentXNode, resetAs(agentUser, true),
			"the audit anchor of node node-x may be reset only by a person, not by " + agentUser + " with a token bound to node node-x" + notAPerson},
		{"a ServiceAccount bound to the role cannot reset", botClient, resetAs("system:serviceaccount:pipeguard-agent:"+bot, true),
			"the audit anchor of node node-x may be reset only by a person, not by system:serviceaccount:pipeguard-agent:" + bot + notAPerson},
		{"the node's kubelet credentials, bound to the role, cannot reset", kubelet, resetAs("system:node:node-x", true),
			"the audit anchor of node node-x may be reset only by a person, not by system:node:node-x" + notAPerson},
		{"the recovery role without reset-by", alice, resetAs("", true),
			"a reset of the audit anchor of node node-x needs the annotation audit.pipeguard.io/reset set to the reason and audit.pipeguard.io/reset-by set to your user name, alice"},
		{"the recovery role in someone else's name", alice, resetAs("bob", true),
			"a reset of the audit anchor of node node-x needs the annotation audit.pipeguard.io/reset set to the reason and audit.pipeguard.io/reset-by set to your user name, alice"},
		{"the recovery role grants no delete", alice, deleteAnchor,
			`User "alice" cannot delete resource "leases" in API group "coordination.k8s.io" in the namespace "pipeguard-agent"`},
		{"the recovery role cannot write the seq back without a reset", alice, writeSeq(5),
			"the audit anchor of node node-x is written only by the pipeguard-agent ServiceAccount, not by alice"},
	}
	for _, r := range refusals {
		if err := r.do(r.client); err == nil || !strings.HasSuffix(err.Error(), r.want) && !strings.Contains(err.Error(), denied+r.want) {
			t.Errorf("%s: %v\nwant %s", r.name, err, r.want)
		}
	}

	// The reset, with the commands of docs/audit.md.
	kubectl := userKubectl(t, env, "alice")
	me := strings.TrimSpace(kubectl("auth", "whoami", "-o", "jsonpath={.status.userInfo.username}"))
	kubectl("-n", ns, "annotate", "lease", leaseName, "--overwrite",
		"audit.pipeguard.io/reset="+resetReason, "audit.pipeguard.io/reset-by="+me, "audit.pipeguard.io/reset-at-seq-")

	_, err = review.ReadAnchor(ctx, admin, "", "node-x")
	wantPending := `Lease pipeguard-agent/pipeguard-audit-node-x: audit anchor reset and not anchored since: alice reset it (reason: "` + resetReason +
		`") and the agent on node node-x has not anchored since, so the end of its log cannot be verified yet; verify again once the agent has published its head (every publication interval while it writes records; restarting the agent publishes at once)`
	if !errors.Is(err, review.ErrAnchorResetPending) || err.Error() != wantPending {
		t.Errorf("reading the anchor before the agent re-anchors: %v\nwant %s", err, wantPending)
	}

	// Reset, not yet re-anchored: still only node-x's agent, and only as
	// the first anchor after a reset.
	if err := anchor.Write(ctx, agentY, ns, anchorAt("node-x", 1)); err == nil || !strings.Contains(err.Error(), "may be written only by the agent on that node; this request comes from node node-y") {
		t.Errorf("node-y's agent anchoring the reset anchor of node-x: %v", err)
	}
	if err := updateAnnotations(ctx, agentX, func(a map[string]string) { a[audit.AnchorSeq] = "3" }); err == nil ||
		!strings.HasSuffix(err.Error(), "the audit anchor of node node-x was reset: the first anchor after the reset sets audit.pipeguard.io/reset-at-seq to its seq") {
		t.Errorf("the agent anchoring after the reset without reset-at-seq: %v", err)
	}
	if err := updateAnnotations(ctx, agentX, func(a map[string]string) { delete(a, audit.AnchorReset) }); err == nil ||
		!strings.HasSuffix(err.Error(), "may be reset only by a person, not by "+agentUser+" with a token bound to node node-x"+notAPerson) {
		t.Errorf("the agent removing the reset: %v", err)
	}

	// The agent anchors again, from its own head.
	if err := pub.Publish(ctx); err != nil {
		t.Fatalf("the agent anchoring after the reset: %v", err)
	}
	lease, err := admin.CoordinationV1().Leases(ns).Get(ctx, leaseName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range map[string]string{audit.AnchorSeq: itoa(head.Seq), audit.AnchorResetAtSeq: itoa(head.Seq), audit.AnchorReset: resetReason, audit.AnchorResetBy: "alice"} {
		if lease.Annotations[k] != v {
			t.Errorf("after the agent re-anchored, annotation %s is %q, want %q", k, lease.Annotations[k], v)
		}
	}

	// From there on the anchor is guarded as before, and keeps the reset.
	after := []struct {
		name string
		edit func(a map[string]string)
		want string
	}{
		{"the agent cannot rewind", func(a map[string]string) { a[audit.AnchorSeq] = "3" },
			"the audit anchor of node node-x may not go backwards: seq 3 is below the anchored seq " + itoa(head.Seq)},
		{"the agent cannot move reset-at-seq", func(a map[string]string) { a[audit.AnchorResetAtSeq] = "3" },
			"the audit anchor of node node-x: audit.pipeguard.io/reset-at-seq records where the agent anchored after a reset and changes only with the next reset"},
		{"the agent cannot drop reset-at-seq", func(a map[string]string) { delete(a, audit.AnchorResetAtSeq) },
			"the audit anchor of node node-x may be reset only by a person, not by " + agentUser},
		{"the agent cannot change the reason", func(a map[string]string) { a[audit.AnchorReset] = "routine" },
			"the audit anchor of node node-x may be reset only by a person, not by " + agentUser},
	}
	for _, s := range after {
		if err := updateAnnotations(ctx, agentX, s.edit); err == nil || !strings.Contains(err.Error(), denied+s.want) {
			t.Errorf("%s: %v\nwant %s", s.name, err, s.want)
		}
	}
	if err := resetAs("alice", false)(alice); err == nil || !strings.HasSuffix(err.Error(),
		"a reset of the audit anchor of node node-x removes the annotation audit.pipeguard.io/reset-at-seq (where the agent anchored after the previous reset); the agent sets it again when it next anchors") {
		t.Errorf("a second reset that keeps reset-at-seq: %v", err)
	}
	appendRecords(1)
	if err := pub.Publish(ctx); err != nil {
		t.Fatalf("the agent advancing its anchor after the reset: %v", err)
	}
	final, err := l.Head()
	if err != nil {
		t.Fatal(err)
	}

	// Verification passes and says what the reset leaves unproven.
	rep = verify(t, admin, logPath)
	if !rep.OK() {
		t.Fatalf("verifying after the reset: %v", rep.Problems)
	}
	wantNotice := `the anchor of node node-x was reset by alice (reason: "` + resetReason + `") and the agent anchored again from record seq ` + itoa(head.Seq) +
		`: a reset discards the anchored head, so records up to seq ` + itoa(head.Seq) + ` were anchored only after the reset and a cut or rewrite of them before it cannot be detected;` +
		` the API server's audit log has who reset it and when (the update of the node's anchor Lease that set audit.pipeguard.io/reset)`
	if !hasNotice(rep, wantNotice) {
		t.Errorf("verification notices %v\nwant %s", rep.Notices, wantNotice)
	}
	if !hasNotice(rep, "the chain reaches the anchor: record seq "+itoa(final.Seq)+" hashes to the anchored hash") {
		t.Errorf("verification notices %v: the chain does not reach the anchor", rep.Notices)
	}
	if s := rep.Anchor.String(); !strings.HasSuffix(s, `, reset by alice (reason: "`+resetReason+`") and anchored again from record seq `+itoa(head.Seq)) {
		t.Errorf("the anchor reads %q", s)
	}

	// The API server's audit log names the reset and who made it.
	wantAudit := "reset of the audit anchor of node node-x by alice, reason: " + resetReason
	if ev := findAuditEvent(t, apiAudit, "alice", wantAudit); ev == nil {
		t.Errorf("the API server's audit log has no admitted update of %s by alice annotated pipeguard-audit-anchor/reset=%q", leaseName, wantAudit)
	}
}

// verify reads node-x's anchor as `pipeguard audit verify --node node-x`
// does and verifies the log against it.
func verify(t *testing.T, c kubernetes.Interface, logPath string) *review.Report {
	t.Helper()
	a, err := review.ReadAnchor(context.Background(), c, "", "node-x")
	if err != nil {
		t.Fatal(err)
	}
	return verifyAgainst(t, logPath, a)
}

func hasNotice(rep *review.Report, prefix string) bool {
	for _, n := range rep.Notices {
		if strings.HasPrefix(n.Msg, prefix) {
			return true
		}
	}
	return false
}

// resetAs patches node-x's anchor as `kubectl annotate` does for a reset
// by user; dropAtSeq removes reset-at-seq.
func resetAs(user string, dropAtSeq bool) func(c kubernetes.Interface) error {
	return func(c kubernetes.Interface) error {
		ann := map[string]any{audit.AnchorReset: resetReason}
		if user != "" {
			ann[audit.AnchorResetBy] = user
		}
		if dropAtSeq {
			ann[audit.AnchorResetAtSeq] = nil
		}
		patch, err := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": ann}})
		if err != nil {
			return err
		}
		_, err = c.CoordinationV1().Leases(anchor.DefaultNamespace).Patch(context.Background(), audit.AnchorLeaseName("node-x"), types.MergePatchType, patch, metav1.PatchOptions{})
		return err
	}
}

func deleteAnchor(c kubernetes.Interface) error {
	return c.CoordinationV1().Leases(anchor.DefaultNamespace).Delete(context.Background(), audit.AnchorLeaseName("node-x"), metav1.DeleteOptions{})
}

func writeSeq(seq uint64) func(c kubernetes.Interface) error {
	return func(c kubernetes.Interface) error {
		return anchor.Write(context.Background(), c, anchor.DefaultNamespace, anchorAt("node-x", seq))
	}
}

// updateAnnotations reads node-x's anchor, edits its annotations and
// writes it back with c.
func updateAnnotations(ctx context.Context, c kubernetes.Interface, edit func(map[string]string)) error {
	leases := c.CoordinationV1().Leases(anchor.DefaultNamespace)
	l, err := leases.Get(ctx, audit.AnchorLeaseName("node-x"), metav1.GetOptions{})
	if err != nil {
		return err
	}
	edit(l.Annotations)
	_, err = leases.Update(ctx, l, metav1.UpdateOptions{})
	return err
}

// nodeToken returns a client with a token of the agent's ServiceAccount
// bound to the Node itself, as a node can request for a service.
func nodeToken(t *testing.T, env *testenv.Env, c kubernetes.Interface, nodeName string) kubernetes.Interface {
	t.Helper()
	n, err := c.CoreV1().Nodes().Get(context.Background(), nodeName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return tokenClient(t, env, c, &authenticationv1.BoundObjectReference{Kind: "Node", APIVersion: "v1", Name: n.Name, UID: n.UID})
}

func userClient(t *testing.T, env *testenv.Env, name string, groups ...string) kubernetes.Interface {
	t.Helper()
	return kubernetes.NewForConfigOrDie(env.UserConfig(t, name, groups...))
}

// grant gives subject rule in the agent's namespace.
func grant(t *testing.T, c kubernetes.Interface, name string, rule rbacv1.PolicyRule, subject rbacv1.Subject) {
	t.Helper()
	ctx := context.Background()
	ns := anchor.DefaultNamespace
	if _, err := c.RbacV1().Roles(ns).Create(ctx, &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: name}, Rules: []rbacv1.PolicyRule{rule}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.RbacV1().RoleBindings(ns).Create(ctx, &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		RoleRef:    rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "Role", Name: name},
		Subjects:   []rbacv1.Subject{subject},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// bindRecovery binds the recovery ClusterRole in the agent's namespace, as
// docs/audit.md says.
func bindRecovery(t *testing.T, c kubernetes.Interface, subjects ...rbacv1.Subject) {
	t.Helper()
	if _, err := c.RbacV1().RoleBindings(anchor.DefaultNamespace).Create(context.Background(), &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: recoveryRole},
		RoleRef:    rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: recoveryRole},
		Subjects:   subjects,
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// userKubectl returns a function that runs the control plane's kubectl as
// user and fails the test when it fails.
func userKubectl(t *testing.T, env *testenv.Env, user string) func(args ...string) string {
	t.Helper()
	assets, err := testenv.AssetsDir()
	if err != nil {
		t.Fatal(err)
	}
	cfg := env.UserConfig(t, user)
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	if err := clientcmd.WriteToFile(kubeconfigOf(cfg, user), kubeconfig); err != nil {
		t.Fatal(err)
	}
	return func(args ...string) string {
		t.Helper()
		out, err := exec.Command(filepath.Join(assets, "kubectl"), append([]string{"--kubeconfig", kubeconfig}, args...)...).CombinedOutput()
		if err != nil {
			t.Fatalf("kubectl %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return string(out)
	}
}

func kubeconfigOf(cfg *rest.Config, user string) clientcmdapi.Config {
	return clientcmdapi.Config{
		Clusters:       map[string]*clientcmdapi.Cluster{"envtest": {Server: cfg.Host, CertificateAuthorityData: cfg.CAData}},
		AuthInfos:      map[string]*clientcmdapi.AuthInfo{user: {ClientCertificateData: cfg.CertData, ClientKeyData: cfg.KeyData}},
		Contexts:       map[string]*clientcmdapi.Context{"envtest": {Cluster: "envtest", AuthInfo: user}},
		CurrentContext: "envtest",
	}
}

// findAuditEvent returns the API server audit event of an admitted write by
// user to node-x's anchor that carries the policy's reset annotation value.
func findAuditEvent(t *testing.T, path, user, value string) map[string]any {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		f, err := os.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(f)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			var ev struct {
				Stage          string `json:"stage"`
				User           struct{ Username string }
				ObjectRef      struct{ Name string }
				ResponseStatus struct{ Code int }
				Annotations    map[string]string `json:"annotations"`
			}
			if json.Unmarshal(sc.Bytes(), &ev) != nil {
				continue
			}
			if ev.Stage == "ResponseComplete" && ev.User.Username == user && ev.ObjectRef.Name == audit.AnchorLeaseName("node-x") &&
				ev.ResponseStatus.Code == 200 && ev.Annotations["pipeguard-audit-anchor/reset"] == value {
				f.Close()
				var m map[string]any
				_ = json.Unmarshal(sc.Bytes(), &m)
				return m
			}
		}
		f.Close()
		if time.Now().After(deadline) {
			return nil
		}
		// Poll under the deadline above for the audit event; the pause only spares the CPU.
		time.Sleep(200 * time.Millisecond)
	}
}
