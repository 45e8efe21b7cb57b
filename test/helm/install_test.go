package helm_test

import (
	"bytes"
	"context"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"helm.sh/helm/v4/pkg/action"
	"helm.sh/helm/v4/pkg/kube"
	release "helm.sh/helm/v4/pkg/release/v1"
	"k8s.io/cli-runtime/pkg/genericclioptions"

	"github.com/pipeguard/pipeguard/hack/render"
	"github.com/pipeguard/pipeguard/internal/testing/testenv"
)

// cluster is a running kube-apiserver with etcd, and the kubectl that
// hack/control-plane.sh built.
type cluster struct {
	kubeconfig, kubectl string
}

func startCluster(t *testing.T) cluster {
	t.Helper()
	assets := assetsOrSkip(t)
	env := testenv.Start(t, testenv.Options{})
	return cluster{kubeconfig: env.KubeconfigFile(t), kubectl: filepath.Join(assets, "kubectl")}
}

// install runs helm install pipeguard charts/pipeguard -n pipeguard-system
// --create-namespace --set ... against c, as docs/install.md says.
func (c cluster) install(t *testing.T, sets ...string) (*release.Release, error) {
	t.Helper()
	return c.installWith(t, false, sets...)
}

// helmConfig is helm's configuration for c, releases in pipeguard-system.
func (c cluster) helmConfig(t *testing.T) *action.Configuration {
	t.Helper()
	ns := "pipeguard-system"
	flags := genericclioptions.NewConfigFlags(false)
	flags.KubeConfig, flags.Namespace = &c.kubeconfig, &ns
	cfg := action.NewConfiguration()
	if err := cfg.Init(flags, ns, "secret"); err != nil {
		t.Fatalf("helm configuration: %v", err)
	}
	return cfg
}

// installWith is install, with --take-ownership --force-conflicts when
// takeOwnership.
func (c cluster) installWith(t *testing.T, takeOwnership bool, sets ...string) (*release.Release, error) {
	t.Helper()
	install := action.NewInstall(c.helmConfig(t))
	install.ReleaseName, install.Namespace, install.CreateNamespace = "pipeguard", "pipeguard-system", true
	// --take-ownership --force-conflicts: kubectl's server-side apply
	// owns the fields of a kustomize install.
	install.TakeOwnership, install.ForceConflicts = takeOwnership, takeOwnership
	// No kubelet runs here: nothing would become ready, so do not wait.
	install.WaitStrategy = kube.HookOnlyStrategy
	install.Timeout = time.Minute
	rel, err := install.Run(loadChart(t), values(t, sets...))
	if err != nil {
		return nil, err
	}
	return rel.(*release.Release), nil
}

// kubectlRun runs kubectl against c with stdin.
func (c cluster) kubectlRun(t *testing.T, stdin string, args ...string) (string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, c.kubectl, append([]string{"--kubeconfig", c.kubeconfig}, args...)...)
	cmd.Stdin = strings.NewReader(stdin)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	return out.String(), err
}

// TestInstallOnAPIServer installs the chart with helm's SDK on a real
// kube-apiserver as docs/install.md says, and checks that the API server
// holds every object of the release.
func TestInstallOnAPIServer(t *testing.T) {
	c := startCluster(t)
	start := time.Now()
	rel, err := c.install(t, "image.repository=registry.example.com/pipeguard", "image.tag=v0.1.0")
	if err != nil {
		t.Fatalf("helm install: %v", err)
	}
	if got := string(rel.Info.Status); got != "deployed" {
		t.Fatalf("release status %q, want deployed: %s", got, rel.Info.Description)
	}
	out := c.releaseObjects(t, rel)
	t.Logf("helm install put the %d objects of config/default on the API server in %s", len(strings.Fields(out)), time.Since(start).Round(time.Millisecond))
	labels, err := c.kubectlRun(t, "", "get", "namespace", "pipeguard-system", "-o", "jsonpath={.metadata.labels}")
	if err != nil || !strings.Contains(labels, `"pod-security.kubernetes.io/enforce":"restricted"`) {
		t.Errorf("namespace pipeguard-system (made by --create-namespace, then the chart) lacks Pod Security restricted: %s %v", labels, err)
	}

	// helm uninstall removes the webhook configuration, the CRD and the rest.
	uninstall := action.NewUninstall(c.helmConfig(t))
	uninstall.WaitStrategy = kube.HookOnlyStrategy
	if _, err := uninstall.Run("pipeguard"); err != nil {
		t.Fatalf("helm uninstall: %v", err)
	}
	// Deletion is asynchronous: the API server removes a CRD only after
	// its finalizer has deleted the custom resources, so each object gets
	// a while to go.
	for _, o := range []string{"validatingwebhookconfiguration/pipeguard", "crd/pipeaccesspolicies.pipeguard.io", "clusterrole/pipeguard-webhook"} {
		// Poll under a deadline for the object to go; the pause only spares the CPU.
		for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(200 * time.Millisecond) {
			out, err := c.kubectlRun(t, "", "get", o)
			if err != nil && strings.Contains(out, "NotFound") {
				break
			}
			if time.Now().After(deadline) {
				t.Errorf("60 s after helm uninstall, kubectl get %s: %v\n%s", o, err, out)
				break
			}
		}
	}
}

// TestTakeOverKustomizeInstall: an install made from config/default (as
// make deploy applies it) is refused by helm install, naming an object
// that exists, and taken over with --take-ownership --force-conflicts.
func TestTakeOverKustomizeInstall(t *testing.T) {
	c := startCluster(t)
	manifests, err := render.Overlay(filepath.Join(repoRoot, "config", "default"), render.Options{WebhookImage: webhookImage})
	if err != nil {
		t.Fatal(err)
	}
	if out, err := c.kubectlRun(t, string(manifests), "apply", "--server-side", "-f", "-"); err != nil {
		t.Fatalf("kubectl apply config/default: %v\n%s", err, out)
	}
	sets := []string{"image.repository=registry.example.com/pipeguard", "image.tag=v0.1.0"}
	_, err = c.install(t, sets...)
	if err == nil || !strings.Contains(err.Error(), "exists and cannot be imported into the current release") {
		t.Fatalf("helm install over a kustomize install: error %v, want one saying an object exists", err)
	}
	rel, err := c.installWith(t, true, sets...)
	if err != nil {
		t.Fatalf("helm install --take-ownership --force-conflicts: %v", err)
	}
	if got := string(rel.Info.Status); got != "deployed" {
		t.Fatalf("release status %q, want deployed", got)
	}
}

// TestInstallEveryPartOnAPIServer installs monitoring, the agent and
// policy reports of both groups. Monitoring needs the Prometheus Operator's CRDs: without
// them the install fails and names what is missing; with stand-ins for
// them (the schema is the operator's business) every object is accepted.
func TestInstallEveryPartOnAPIServer(t *testing.T) {
	c := startCluster(t)
	sets := append(append([]string{}, imageSets...), "prometheus.enabled=true", "agent.enabled=true", "policyReport.enabled=true", "openReports.enabled=true")
	_, err := c.install(t, sets...)
	if err == nil || !strings.Contains(err.Error(), `no matches for kind "PodMonitor" in version "monitoring.coreos.com/v1"`) {
		t.Fatalf("helm install with prometheus.enabled and no Prometheus Operator: error %v, want one naming the missing PodMonitor kind", err)
	}
	c.stubCRDs(t, [2]string{"servicemonitors", "ServiceMonitor"}, [2]string{"podmonitors", "PodMonitor"}, [2]string{"prometheusrules", "PrometheusRule"})
	rel, err := c.install(t, sets...)
	if err != nil {
		t.Fatalf("helm install with the operator's CRDs: %v", err)
	}
	out := c.releaseObjects(t, rel)
	for _, want := range []string{"podmonitor.monitoring.coreos.com/pipeguard-agent", "servicemonitor.monitoring.coreos.com/pipeguard-webhook",
		"prometheusrule.monitoring.coreos.com/pipeguard", "daemonset.apps/pipeguard-agent", "customresourcedefinition.apiextensions.k8s.io/policyreports.wgpolicyk8s.io",
		"customresourcedefinition.apiextensions.k8s.io/reports.openreports.io", "clusterrole.rbac.authorization.k8s.io/pipeguard-webhook-policyreports"} {
		if !strings.Contains(out, want+"\n") {
			t.Errorf("the API server has no %s:\n%s", want, out)
		}
	}
}

// TestMonitoringWithoutAgentOnAPIServer: prometheus.enabled without the
// agent installs on a cluster with no pipeguard-agent namespace and no
// PodMonitor CRD.
func TestMonitoringWithoutAgentOnAPIServer(t *testing.T) {
	c := startCluster(t)
	c.stubCRDs(t, [2]string{"servicemonitors", "ServiceMonitor"}, [2]string{"prometheusrules", "PrometheusRule"})
	rel, err := c.install(t, "image.repository=registry.example.com/pipeguard", "image.tag=v0.1.0", "prometheus.enabled=true")
	if err != nil {
		t.Fatalf("helm install --set prometheus.enabled=true without the agent: %v", err)
	}
	out := c.releaseObjects(t, rel)
	for _, want := range []string{"servicemonitor.monitoring.coreos.com/pipeguard-webhook", "prometheusrule.monitoring.coreos.com/pipeguard",
		"service/pipeguard-webhook-metrics", "configmap/pipeguard-grafana-dashboard"} {
		if !strings.Contains(out, want+"\n") {
			t.Errorf("the API server has no %s:\n%s", want, out)
		}
	}
	if out, err := c.kubectlRun(t, "", "get", "namespace", "pipeguard-agent"); err == nil || !strings.Contains(out, "NotFound") {
		t.Errorf("namespace pipeguard-agent exists without the agent: %v\n%s", err, out)
	}
}

// stubCRDs installs stand-ins for the Prometheus Operator's CRDs, given
// as plural and kind, and waits until they are established.
func (c cluster) stubCRDs(t *testing.T, crds ...[2]string) {
	t.Helper()
	for _, crd := range crds {
		if out, err := c.kubectlRun(t, testenv.StubCRD("monitoring.coreos.com", crd[0], crd[1]), "apply", "--server-side", "-f", "-"); err != nil {
			t.Fatalf("installing the %s stand-in: %v\n%s", crd[1], err, out)
		}
		if out, err := c.kubectlRun(t, "", "wait", "--for=condition=Established", "--timeout=60s", "crd/"+crd[0]+".monitoring.coreos.com"); err != nil {
			t.Fatalf("%v\n%s", err, out)
		}
	}
}

// releaseObjects returns the names (kubectl -o name) of the release's
// objects on the API server, and fails t unless it holds every one.
func (c cluster) releaseObjects(t *testing.T, rel *release.Release) string {
	t.Helper()
	objs, err := render.Parse([]byte(rel.Manifest))
	if err != nil {
		t.Fatal(err)
	}
	out, err := c.kubectlRun(t, rel.Manifest, "get", "-f", "-", "-o", "name")
	if err != nil {
		t.Fatalf("kubectl get -f the release's manifest: %v\n%s", err, out)
	}
	if n := len(strings.Fields(out)); n != len(objs) {
		t.Fatalf("the API server holds %d of the release's %d objects:\n%s", n, len(objs), out)
	}
	return out
}
