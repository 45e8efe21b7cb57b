package install_test

import (
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pipeguard/pipeguard/internal/testing/testenv"
)

// config/networkpolicy admits the API servers to the webhook port and
// Prometheus to the metrics port of exactly the webhook's pods, and nothing
// else; until the API servers' range is set, it cannot be applied at all,
// so it never cuts the API server off from the fail-closed webhook.
func TestNetworkPolicyOverlay(t *testing.T) {
	k := startCluster(t)
	policy := find(t, objects(t, k.render(t, "networkpolicy")), "NetworkPolicy", "pipeguard-webhook")
	deployment := find(t, objects(t, k.render(t, "default")), "Deployment", "pipeguard-webhook")

	// The policy selects the Deployment's pods, in its namespace.
	if ns := policy.GetNamespace(); ns != deployment.GetNamespace() {
		t.Errorf("the NetworkPolicy is in namespace %q, the webhook in %q", ns, deployment.GetNamespace())
	}
	selector := field(t, policy.Object, "spec", "podSelector", "matchLabels").(map[string]any)
	labels := field(t, deployment.Object, "spec", "template", "metadata", "labels").(map[string]any)
	for k, v := range selector {
		if labels[k] != v {
			t.Errorf("the NetworkPolicy selects %s=%v, which the webhook's pods do not carry (%v)", k, v, labels)
		}
	}
	// Its two rules open the container ports named webhook and metrics,
	// and no others.
	ports := map[string]string{}
	for _, c := range field(t, deployment.Object, "spec", "template", "spec", "containers").([]any) {
		cports, _ := c.(map[string]any)["ports"].([]any)
		for _, p := range cports {
			p := p.(map[string]any)
			ports[fmt.Sprint(p["name"])] = fmt.Sprint(p["containerPort"])
		}
	}
	rules := field(t, policy.Object, "spec", "ingress").([]any)
	if len(rules) != 2 {
		t.Fatalf("%d ingress rules, want 2 (admission, metrics)", len(rules))
	}
	for i, want := range []string{"webhook", "metrics"} {
		rp, _ := rules[i].(map[string]any)["ports"].([]any)
		if ports[want] == "" || len(rp) != 1 || fmt.Sprint(rp[0].(map[string]any)["port"]) != ports[want] {
			t.Errorf("ingress rule %d opens %v, want only the %s port %s", i, rp, want, ports[want])
		}
	}

	// As shipped, the API server refuses it: nothing is restricted.
	manifests := k.render(t, "networkpolicy")
	k.must(t, nil, "create", "namespace", "pipeguard-system")
	out, err := k.run(t, manifests, "apply", "--server-side", "-f", "-")
	if err == nil || !strings.Contains(out, `The NetworkPolicy "pipeguard-webhook" is invalid: spec.ingress[0].from[0].ipBlock.cidr: Invalid value: "SET-THE-API-SERVER-CIDR"`) || !strings.Contains(out, "SET-THE-API-SERVER-CIDR") {
		t.Fatalf("the placeholder range was not refused: %v\n%s", err, out)
	}
	if out, _ := k.run(t, nil, "get", "networkpolicy", "-n", "pipeguard-system", "-o", "name"); strings.TrimSpace(out) != "" && !strings.Contains(out, "No resources") {
		t.Fatalf("a NetworkPolicy exists after the refused apply: %s", out)
	}
	// With a range set, it applies.
	k.must(t, []byte(strings.ReplaceAll(string(manifests), "SET-THE-API-SERVER-CIDR", "10.0.0.0/24")), "apply", "--server-side", "-f", "-")
	k.must(t, nil, "get", "networkpolicy", "-n", "pipeguard-system", "pipeguard-webhook")
}

// make deploy refuses the overlay until the range is set, and says where.
func TestDeployRefusesNetworkPolicyWithoutTheAPIServerRange(t *testing.T) {
	if _, err := exec.LookPath("make"); err != nil {
		t.Skip("no make on this machine")
	}
	assets, err := testenv.AssetsDir()
	if err != nil {
		t.Skipf("no kubectl: %v", err)
	}
	out, code := runCommand(t, makeEnv("KUBECTL="+filepath.Join(assets, "kubectl")), "make", "--no-print-directory", "deploy", "OVERLAY=networkpolicy", "DEPLOY_DIR="+t.TempDir())
	want := `make deploy: config/networkpolicy: the NetworkPolicy pipeguard-webhook does not name the address range your API servers connect from (cidr: SET-THE-API-SERVER-CIDR).
Set it in config/networkpolicy/webhook-ingress.yaml, or in an overlay of your own, e.g. the control plane nodes' subnet:
  cidr: 10.0.0.0/24
Nothing was applied: a policy without it would stop the API server from calling the fail-closed webhook.
`
	if code == 0 || !strings.Contains(out, want) {
		t.Fatalf("exit %d, output:\n%s\nwant it to contain:\n%s", code, out, want)
	}
}
