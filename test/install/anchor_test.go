package install_test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pipeguard/pipeguard/agent/audit/anchor"
	"github.com/pipeguard/pipeguard/internal/testing/testenv"
)

// TestAgentKustomizationGuardsAnchorsInItsNamespaceOnly renders
// config/agent and checks that the audit anchor policy binds in the
// agent's namespace alone, that this namespace is the agent's default
// --audit-anchor-namespace, that it follows a change of the
// kustomization's namespace (and the overlay patch docs/audit.md gives),
// and that the recovery role exists, bound to nobody.
func TestAgentKustomizationGuardsAnchorsInItsNamespaceOnly(t *testing.T) {
	assets, err := testenv.AssetsDir()
	if err != nil {
		t.Skipf("no kubectl to render with: %v", err)
	}
	k := kubectl{bin: filepath.Join(assets, "kubectl"), kubeconfig: os.DevNull}
	objs := objects(t, k.render(t, "agent"))

	ns := find(t, objs, "Namespace", anchor.DefaultNamespace).GetName()
	ds := find(t, objs, "DaemonSet", "pipeguard-agent")
	if ds.GetNamespace() != ns {
		t.Errorf("the agent runs in %s, but --audit-anchor-namespace defaults to %s", ds.GetNamespace(), ns)
	}
	container, _ := json.Marshal(field(t, ds.Object, "spec", "template", "spec", "containers"))
	for _, want := range []string{`"--audit-anchor-namespace=$(POD_NAMESPACE)"`, `{"name":"POD_NAMESPACE","valueFrom":{"fieldRef":{"fieldPath":"metadata.namespace"}}}`} {
		if !strings.Contains(string(container), want) {
			t.Errorf("the agent does not anchor in its own namespace: no %s in %s", want, container)
		}
	}
	binding := find(t, objs, "ValidatingAdmissionPolicyBinding", "pipeguard-audit-anchor")
	if got := bindingNamespaces(t, binding.Object); got != "kubernetes.io/metadata.name In ["+ns+"]" {
		t.Errorf("the anchor policy binds where %s, want only in %s", got, ns)
	}

	recovery := find(t, objs, "ClusterRole", "pipeguard-audit-anchor-recovery")
	if !grants(t, recovery, "audit.pipeguard.io", "auditanchors", "reset") {
		t.Error("ClusterRole pipeguard-audit-anchor-recovery does not grant reset on auditanchors.audit.pipeguard.io")
	}
	for _, o := range objs {
		if kind := o.GetKind(); (kind == "RoleBinding" || kind == "ClusterRoleBinding") && field(t, o.Object, "roleRef", "name") == recovery.GetName() {
			t.Errorf("%s %s binds the recovery role: it is for people, bound at need", kind, o.GetName())
		}
	}
	if grants(t, find(t, objs, "Role", "pipeguard-agent-audit-anchor"), "coordination.k8s.io", "leases", "delete") {
		t.Error("the agent may delete Leases")
	}

	// Another namespace, in the kustomization or in an overlay.
	dir := t.TempDir()
	renamed, orig := filepath.Join(dir, "renamed"), filepath.Join(dir, "agent")
	for _, d := range []string{renamed, orig} {
		if err := os.CopyFS(d, os.DirFS(filepath.Join(repoRoot, "config", "agent"))); err != nil {
			t.Fatal(err)
		}
	}
	kz := filepath.Join(renamed, "kustomization.yaml")
	b, err := os.ReadFile(kz)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(kz, []byte(strings.Replace(string(b), "\nnamespace: "+ns+"\n", "\nnamespace: windows-agents\n", 1)), 0o600); err != nil {
		t.Fatal(err)
	}
	overlay := filepath.Join(dir, "overlay")
	if err := os.MkdirAll(overlay, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(overlay, "kustomization.yaml"), []byte(`namespace: other-agents
resources:
- ../agent
patches:
- target: {kind: ValidatingAdmissionPolicyBinding, name: pipeguard-audit-anchor}
  patch: |-
    - op: replace
      path: /spec/matchResources/namespaceSelector/matchExpressions/0/values/0
      value: other-agents
`), 0o600); err != nil {
		t.Fatal(err)
	}
	for dir, want := range map[string]string{renamed: "windows-agents", overlay: "other-agents"} {
		objs := objects(t, []byte(k.must(t, nil, "kustomize", dir)))
		if got := find(t, objs, "DaemonSet", "pipeguard-agent").GetNamespace(); got != want {
			t.Fatalf("%s: the agent runs in %s, want %s", dir, got, want)
		}
		if got := bindingNamespaces(t, find(t, objs, "ValidatingAdmissionPolicyBinding", "pipeguard-audit-anchor").Object); got != "kubernetes.io/metadata.name In ["+want+"]" {
			t.Errorf("%s: the anchor policy binds where %s, want only in %s", dir, got, want)
		}
	}
}

// bindingNamespaces describes the namespaceSelector of a policy binding.
func bindingNamespaces(t *testing.T, obj map[string]any) string {
	t.Helper()
	sel := field(t, obj, "spec", "matchResources", "namespaceSelector").(map[string]any)
	if _, ok := sel["matchLabels"]; ok || len(sel) != 1 {
		return fmt.Sprint(sel)
	}
	var parts []string
	for _, e := range sel["matchExpressions"].([]any) {
		e := e.(map[string]any)
		parts = append(parts, fmt.Sprintf("%v %v %v", e["key"], e["operator"], e["values"]))
	}
	return strings.Join(parts, ", ")
}
