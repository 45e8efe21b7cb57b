package install_test

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/pipeguard/pipeguard/internal/testing/testenv"
)

// TestPrometheusOverlayScrapesTheAgent renders config/prometheus-agent and
// config/agent and checks that they fit together: the PodMonitor, in the
// agent's namespace, selects the agent's pods, scrapes their metrics port
// over HTTPS with the token of a ServiceAccount bound to
// pipeguard-metrics-reader, which grants get on /metrics; the agent serves
// that port with --metrics-secure and may create the reviews it needs.
func TestPrometheusOverlayScrapesTheAgent(t *testing.T) {
	assets, err := testenv.AssetsDir()
	if err != nil {
		t.Skipf("no kubectl to render with: %v", err)
	}
	// kustomize needs no cluster.
	k := kubectl{bin: filepath.Join(assets, "kubectl"), kubeconfig: os.DevNull}
	mon := objects(t, k.render(t, "prometheus-agent"))
	agent := objects(t, k.render(t, "agent"))

	for _, o := range mon {
		want := []string{"pipeguard-system"}
		switch o.GetKind() {
		case "PodMonitor":
			want = []string{"pipeguard-agent"}
		case "Secret", "ServiceAccount":
			// The scraper of each monitor, beside it.
			want = []string{"pipeguard-agent", "pipeguard-system"}
		case "ClusterRole", "ClusterRoleBinding":
			want = []string{""}
		}
		if !slices.Contains(want, o.GetNamespace()) {
			t.Errorf("%s %s is in namespace %q, want one of %q", o.GetKind(), o.GetName(), o.GetNamespace(), want)
		}
	}

	pm := find(t, mon, "PodMonitor", "pipeguard-agent")
	ds := find(t, agent, "DaemonSet", "pipeguard-agent")
	if ds.GetNamespace() != pm.GetNamespace() {
		t.Errorf("the PodMonitor is in %s, the agent in %s: a PodMonitor finds pods of its own namespace", pm.GetNamespace(), ds.GetNamespace())
	}
	podLabels := field(t, ds.Object, "spec", "template", "metadata", "labels").(map[string]any)
	for key, value := range field(t, pm.Object, "spec", "selector", "matchLabels").(map[string]any) {
		if podLabels[key] != value {
			t.Errorf("the PodMonitor selects %s=%v, the agent's pods have %v", key, value, podLabels)
		}
	}
	endpoints := field(t, pm.Object, "spec", "podMetricsEndpoints").([]any)
	if len(endpoints) != 1 {
		t.Fatalf("podMetricsEndpoints %v, want one", endpoints)
	}
	ep := endpoints[0].(map[string]any)
	if ep["scheme"] != "https" || ep["path"] != "/metrics" {
		t.Errorf("the PodMonitor scrapes %v://…%v, want https and /metrics", ep["scheme"], ep["path"])
	}
	if field(t, ep, "tlsConfig", "insecureSkipVerify") != true {
		t.Error("the PodMonitor verifies a certificate the agent self-signs at each start")
	}

	// The port and the flags of the agent.
	container := field(t, ds.Object, "spec", "template", "spec", "containers").([]any)[0].(map[string]any)
	var port any
	for _, p := range field(t, container, "ports").([]any) {
		if p := p.(map[string]any); p["name"] == ep["port"] {
			port = p["containerPort"]
		}
	}
	if fmt.Sprint(port) != "8888" {
		t.Errorf("the agent's port %v is %v, want 8888", ep["port"], port)
	}
	var args []string
	for _, a := range field(t, container, "args").([]any) {
		args = append(args, a.(string))
	}
	for _, want := range []string{"--metrics-bind-address=:8888", "--metrics-secure=true", "--kubeconfig=in-cluster"} {
		if !slices.Contains(args, want) {
			t.Errorf("the agent runs without %s: %v", want, args)
		}
	}
	if !grants(t, find(t, agent, "ClusterRole", "pipeguard-agent"), "authentication.k8s.io", "tokenreviews", "create") ||
		!grants(t, find(t, agent, "ClusterRole", "pipeguard-agent"), "authorization.k8s.io", "subjectaccessreviews", "create") {
		t.Error("the agent's ClusterRole cannot create the TokenReviews and SubjectAccessReviews of --metrics-secure")
	}

	// The token: a Secret of the scraper ServiceAccount, bound to the reader.
	secretName := field(t, ep, "authorization", "credentials", "name")
	secret := findIn(t, mon, "Secret", pm.GetNamespace(), secretName.(string))
	if secret.Object["type"] != "kubernetes.io/service-account-token" {
		t.Errorf("Secret %s is of type %v, want a ServiceAccount token", secretName, secret.Object["type"])
	}
	sa := secret.GetAnnotations()["kubernetes.io/service-account.name"]
	find(t, mon, "ServiceAccount", sa)
	crb := find(t, mon, "ClusterRoleBinding", "pipeguard-metrics-scraper")
	if !bindsReader(t, crb, secret.GetNamespace(), sa) {
		t.Errorf("ClusterRoleBinding %v does not bind pipeguard-metrics-reader to %s/%s", crb.Object, secret.GetNamespace(), sa)
	}
	rules := field(t, find(t, mon, "ClusterRole", "pipeguard-metrics-reader").Object, "rules").([]any)
	if len(rules) != 1 {
		t.Fatalf("pipeguard-metrics-reader has rules %v, want one", rules)
	}
	rule := rules[0].(map[string]any)
	if !slices.Equal(stringList(rule["nonResourceURLs"]), []string{"/metrics"}) || !slices.Equal(stringList(rule["verbs"]), []string{"get"}) {
		t.Errorf("pipeguard-metrics-reader grants %v, want get on /metrics only", rule)
	}
}

// findIn is find for an object of namespace ns.
func findIn(t *testing.T, objs []*unstructured.Unstructured, kind, ns, name string) *unstructured.Unstructured {
	t.Helper()
	for _, o := range objs {
		if o.GetKind() == kind && o.GetNamespace() == ns && o.GetName() == name {
			return o
		}
	}
	t.Fatalf("rendered manifests have no %s %s/%s", kind, ns, name)
	return nil
}

// bindsReader reports whether crb binds pipeguard-metrics-reader to the
// ServiceAccount ns/sa.
func bindsReader(t *testing.T, crb *unstructured.Unstructured, ns, sa string) bool {
	t.Helper()
	if field(t, crb.Object, "roleRef", "name") != "pipeguard-metrics-reader" {
		return false
	}
	for _, s := range field(t, crb.Object, "subjects").([]any) {
		if s := s.(map[string]any); s["kind"] == "ServiceAccount" && s["name"] == sa && s["namespace"] == ns {
			return true
		}
	}
	return false
}

// TestPrometheusOverlayScrapesTheWebhook renders config/prometheus and
// config/default and checks that they fit together: the ServiceMonitor
// scrapes the webhook's metrics Service over HTTPS with the token of a
// ServiceAccount of its namespace bound to pipeguard-metrics-reader; the
// Service reaches the manager's metrics port, which serves it with
// --metrics-secure; the manager may create the reviews it needs.
func TestPrometheusOverlayScrapesTheWebhook(t *testing.T) {
	assets, err := testenv.AssetsDir()
	if err != nil {
		t.Skipf("no kubectl to render with: %v", err)
	}
	k := kubectl{bin: filepath.Join(assets, "kubectl"), kubeconfig: os.DevNull}
	mon := objects(t, k.render(t, "prometheus"))
	def := objects(t, k.render(t, "default"))

	sm := find(t, mon, "ServiceMonitor", "pipeguard-webhook")
	svc := find(t, mon, "Service", "pipeguard-webhook-metrics")
	dep := find(t, def, "Deployment", "pipeguard-webhook")
	if sm.GetNamespace() != dep.GetNamespace() || svc.GetNamespace() != dep.GetNamespace() {
		t.Errorf("ServiceMonitor in %s, Service in %s, webhook in %s: want one namespace", sm.GetNamespace(), svc.GetNamespace(), dep.GetNamespace())
	}
	endpoints := field(t, sm.Object, "spec", "endpoints").([]any)
	if len(endpoints) != 1 {
		t.Fatalf("endpoints %v, want one", endpoints)
	}
	ep := endpoints[0].(map[string]any)
	if ep["scheme"] != "https" || ep["path"] != "/metrics" {
		t.Errorf("the ServiceMonitor scrapes %v://…%v, want https and /metrics", ep["scheme"], ep["path"])
	}
	if field(t, ep, "tlsConfig", "insecureSkipVerify") != true {
		t.Error("the ServiceMonitor verifies a certificate the webhook self-signs at each start")
	}
	secret := findIn(t, mon, "Secret", sm.GetNamespace(), field(t, ep, "authorization", "credentials", "name").(string))
	if secret.Object["type"] != "kubernetes.io/service-account-token" {
		t.Errorf("Secret %s is of type %v, want a ServiceAccount token", secret.GetName(), secret.Object["type"])
	}
	sa := secret.GetAnnotations()["kubernetes.io/service-account.name"]
	findIn(t, mon, "ServiceAccount", sm.GetNamespace(), sa)
	if !bindsReader(t, find(t, mon, "ClusterRoleBinding", "pipeguard-metrics-scraper"), sm.GetNamespace(), sa) {
		t.Errorf("no ClusterRoleBinding binds pipeguard-metrics-reader to %s/%s", sm.GetNamespace(), sa)
	}

	// The Service's port reaches the manager's, which serves it securely.
	var svcTarget any
	for _, p := range field(t, svc.Object, "spec", "ports").([]any) {
		if p := p.(map[string]any); p["name"] == ep["port"] {
			svcTarget = p["targetPort"]
		}
	}
	container := field(t, dep.Object, "spec", "template", "spec", "containers").([]any)[0].(map[string]any)
	var port any
	for _, p := range field(t, container, "ports").([]any) {
		if p := p.(map[string]any); p["name"] == svcTarget {
			port = p["containerPort"]
		}
	}
	if fmt.Sprint(port) != "8443" {
		t.Errorf("the Service's port %v targets %v, the manager's port %v, want 8443", ep["port"], svcTarget, port)
	}
	var args []string
	for _, a := range field(t, container, "args").([]any) {
		args = append(args, a.(string))
	}
	for _, want := range []string{"--metrics-bind-address=:8443", "--metrics-secure=true"} {
		if !slices.Contains(args, want) {
			t.Errorf("the webhook runs without %s: %v", want, args)
		}
	}
	role := find(t, def, "ClusterRole", "pipeguard-webhook")
	if !grants(t, role, "authentication.k8s.io", "tokenreviews", "create") || !grants(t, role, "authorization.k8s.io", "subjectaccessreviews", "create") {
		t.Error("the webhook's ClusterRole cannot create the TokenReviews and SubjectAccessReviews of --metrics-secure")
	}
}

// grants reports whether the ClusterRole allows verb on resource.
func grants(t *testing.T, role *unstructured.Unstructured, group, resource, verb string) bool {
	t.Helper()
	for _, r := range field(t, role.Object, "rules").([]any) {
		r := r.(map[string]any)
		if slices.Contains(stringList(r["apiGroups"]), group) && slices.Contains(stringList(r["resources"]), resource) && slices.Contains(stringList(r["verbs"]), verb) {
			return true
		}
	}
	return false
}

// stringList converts a decoded YAML list of strings.
func stringList(v any) []string {
	var out []string
	list, _ := v.([]any)
	for _, s := range list {
		if s, ok := s.(string); ok {
			out = append(out, s)
		}
	}
	return out
}
