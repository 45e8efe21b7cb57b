package install_test

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/pipeguard/pipeguard/internal/testing/testenv"
)

// TestDeployPreflight runs `make deploy` for the overlays that need other
// projects' CRDs against a real kube-apiserver: without those CRDs it must
// stop before applying anything and say what is missing, what installs it
// and what to apply instead; with them it must get past the check.
func TestDeployPreflight(t *testing.T) {
	if _, err := exec.LookPath("make"); err != nil {
		t.Skip("no make on this machine")
	}
	k := startCluster(t)
	kubeconfig := k.kubeconfig
	clusterEnv := append(os.Environ(), "KUBECTL="+k.bin, "KUBECONFIG="+kubeconfig)

	// deploy runs make deploy OVERLAY=overlay as an admin does, with this
	// cluster as the current context and an image named, and returns its
	// output and exit code.
	deploy := func(t *testing.T, overlay string) (string, int) {
		t.Helper()
		return runCommand(t, clusterEnv, "make", "--no-print-directory", "deploy", "OVERLAY="+overlay, "IMG=localhost:5000/pipeguard:v1", "DEPLOY_DIR="+t.TempDir())
	}
	// absent fails the test when kubectl finds the object.
	absent := func(t *testing.T, args ...string) {
		t.Helper()
		if out, err := k.run(t, nil, append([]string{"get"}, args...)...); err == nil || !strings.Contains(out, "NotFound") {
			t.Errorf("kubectl get %s: %v\n%s\nwant NotFound: the preflight must stop before anything is applied", strings.Join(args, " "), err, out)
		}
	}
	wantWords := func(t *testing.T, out string, words ...string) {
		t.Helper()
		for _, w := range words {
			if !strings.Contains(out, w) {
				t.Errorf("the output lacks %q:\n%s", w, out)
			}
		}
		if strings.Contains(out, "no matches for kind") {
			t.Errorf("kubectl applied part of the overlay:\n%s", out)
		}
	}

	t.Run("config/prometheus without the Prometheus Operator stops before applying", func(t *testing.T) {
		out, code := deploy(t, "prometheus")
		if code != 2 {
			t.Fatalf("make deploy OVERLAY=prometheus exited %d, want 2 (a failed recipe):\n%s", code, out)
		}
		t.Logf("make deploy OVERLAY=prometheus said:\n%s", out)
		wantWords(t, out,
			"kustomization: OVERLAY=prometheus: the cluster lacks the CRDs servicemonitors.monitoring.coreos.com, prometheusrules.monitoring.coreos.com, which config/prometheus needs; nothing was applied.",
			"They come with the Prometheus Operator",
			"kubectl apply --server-side -f config/prometheus/metrics_service.yaml")
		absent(t, "clusterrole", "pipeguard-metrics-reader")
		absent(t, "namespace", "pipeguard-system")
	})
	t.Run("config/cert-manager without cert-manager stops before applying", func(t *testing.T) {
		out, code := deploy(t, "cert-manager")
		if code != 2 {
			t.Fatalf("make deploy OVERLAY=cert-manager exited %d, want 2 (a failed recipe):\n%s", code, out)
		}
		wantWords(t, out,
			"kustomization: OVERLAY=cert-manager: the cluster lacks the CRDs certificates.cert-manager.io, issuers.cert-manager.io, which config/cert-manager needs; nothing was applied.",
			"They come with cert-manager (https://cert-manager.io/docs/installation/)",
			"make deploy OVERLAY=default")
		absent(t, "crd", "pipeaccesspolicies.pipeguard.io")
		absent(t, "namespace", "pipeguard-system")

		// The command behind make deploy exits 1.
		out, code = runCommand(t, clusterEnv, "go", "run", "./hack/kustomization", "--overlay", "cert-manager",
			"--img", "pipeguard:v1", "--agent-img", "pipeguard-agent:v1", "--out", t.TempDir(), "--preflight-kubectl", k.bin)
		if code != 1 || !strings.Contains(out, "the cluster lacks the CRDs certificates.cert-manager.io, issuers.cert-manager.io") {
			t.Fatalf("hack/kustomization exited %d, want 1:\n%s", code, out)
		}
	})
	t.Run("some CRDs are still missing", func(t *testing.T) {
		k.must(t, []byte(testenv.StubCRD("monitoring.coreos.com", "servicemonitors", "ServiceMonitor")), "apply", "--server-side", "-f", "-")
		k.must(t, nil, "wait", "--for=condition=Established", "--timeout=60s", "crd/servicemonitors.monitoring.coreos.com")
		out, code := deploy(t, "prometheus")
		if code != 2 {
			t.Fatalf("make deploy OVERLAY=prometheus exited %d, want 2:\n%s", code, out)
		}
		wantWords(t, out, "the cluster lacks the CRDs prometheusrules.monitoring.coreos.com, which config/prometheus needs")
		out, code = deploy(t, "prometheus-agent")
		if code != 2 {
			t.Fatalf("make deploy OVERLAY=prometheus-agent exited %d, want 2:\n%s", code, out)
		}
		wantWords(t, out, "the cluster lacks the CRDs podmonitors.monitoring.coreos.com, prometheusrules.monitoring.coreos.com, which config/prometheus-agent needs")
		if strings.Contains(out, "lacks the CRDs servicemonitors") {
			t.Errorf("the installed CRD is named missing:\n%s", out)
		}
		absent(t, "clusterrole", "pipeguard-metrics-reader")
	})
	t.Run("config/prometheus with the Prometheus Operator's CRDs is applied", func(t *testing.T) {
		// The operator installs its CRDs together, PrometheusRule (the
		// alerts) among them.
		for _, c := range [][2]string{{"podmonitors", "PodMonitor"}, {"prometheusrules", "PrometheusRule"}} {
			k.must(t, []byte(testenv.StubCRD("monitoring.coreos.com", c[0], c[1])), "apply", "--server-side", "-f", "-")
			k.must(t, nil, "wait", "--for=condition=Established", "--timeout=60s", "crd/"+c[0]+".monitoring.coreos.com")
		}
		// config/default and config/agent come first and make the namespaces.
		k.must(t, nil, "create", "namespace", "pipeguard-system")
		k.must(t, nil, "create", "namespace", "pipeguard-agent")
		out, code := deploy(t, "prometheus")
		if code != 0 {
			t.Fatalf("make deploy OVERLAY=prometheus exited %d:\n%s", code, out)
		}
		k.must(t, nil, "get", "--namespace", "pipeguard-system", "servicemonitor", "pipeguard-webhook")
		k.must(t, nil, "get", "clusterrole", "pipeguard-metrics-reader")
		k.must(t, nil, "get", "--namespace", "pipeguard-system", "prometheusrule", "pipeguard")
	})
	t.Run("config/cert-manager with cert-manager's CRDs passes the preflight", func(t *testing.T) {
		for _, c := range [][2]string{{"certificates", "Certificate"}, {"issuers", "Issuer"}} {
			k.must(t, []byte(testenv.StubCRD("cert-manager.io", c[0], c[1])), "apply", "--server-side", "-f", "-")
			k.must(t, nil, "wait", "--for=condition=Established", "--timeout=60s", "crd/"+c[0]+".cert-manager.io")
		}
		dir := t.TempDir()
		out, code := runCommand(t, clusterEnv, "go", "run", "./hack/kustomization", "--overlay", "cert-manager",
			"--img", "pipeguard:v1", "--agent-img", "pipeguard-agent:v1", "--out", dir, "--preflight-kubectl", k.bin)
		if code != 0 {
			t.Fatalf("hack/kustomization exited %d:\n%s", code, out)
		}
		if _, err := os.Stat(filepath.Join(dir, "kustomization.yaml")); err != nil {
			t.Fatalf("the preflight passed but kustomization.yaml was not written: %v", err)
		}
	})
}

// runCommand runs a command in the module root with env and returns its combined
// output and exit code.
func runCommand(t *testing.T, env []string, name string, args ...string) (string, int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir, cmd.Env = repoRoot, env
	out, err := cmd.CombinedOutput()
	var exit *exec.ExitError
	switch {
	case err == nil:
		return string(out), 0
	case errors.As(err, &exit):
		return string(out), exit.ExitCode()
	default:
		t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
		return "", -1
	}
}
