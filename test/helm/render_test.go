package helm_test

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// TestDefaultValuesRenderConfigDefault: with only the image set, the
// chart installs exactly the objects of config/default with that image.
func TestDefaultValuesRenderConfigDefault(t *testing.T) {
	got := chartObjects(t, "image.repository=registry.example.com/pipeguard", "image.tag=v0.1.0")
	want := overlayObjects(t, "default")
	if problems := diffObjects(t, "the chart", got, "config/default", want); len(problems) > 0 {
		t.Fatalf("the chart with default values is not config/default:\n%s", strings.Join(problems, "\n"))
	}
	t.Logf("the chart with default values renders the %d objects of config/default, field for field", len(got))
}

// TestTogglesRenderTheirOverlays: each toggle, and each pair that
// interacts, renders what its overlays render.
func TestTogglesRenderTheirOverlays(t *testing.T) {
	cases := map[string]struct {
		sets     []string
		overlays []string
	}{
		"certManager":                  {[]string{"certManager.enabled=true"}, []string{"cert-manager"}},
		"prometheus without agent":     {[]string{"prometheus.enabled=true"}, []string{"default", "prometheus"}},
		"policyReport":                 {[]string{"policyReport.enabled=true"}, []string{"default", "policyreport"}},
		"openReports":                  {[]string{"openReports.enabled=true"}, []string{"default", "policyreport/openreports"}},
		"policyReport and openReports": {[]string{"policyReport.enabled=true", "openReports.enabled=true"}, []string{"default", "policyreport", "policyreport/openreports"}},
		"agent":                        {[]string{"agent.enabled=true"}, []string{"default", "agent"}},
		"prometheus with agent":        {[]string{"prometheus.enabled=true", "agent.enabled=true"}, []string{"default", "agent", "prometheus-agent"}},
		"everything with certManager":  {[]string{"certManager.enabled=true", "prometheus.enabled=true", "policyReport.enabled=true", "agent.enabled=true"}, []string{"cert-manager", "agent", "prometheus-agent", "policyreport"}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := chartObjects(t, append(append([]string{}, imageSets...), tc.sets...)...)
			want := overlayObjects(t, tc.overlays...)
			if problems := diffObjects(t, "the chart", got, "config/"+strings.Join(tc.overlays, "+config/"), want); len(problems) > 0 {
				t.Fatalf("--set %s:\n%s", strings.Join(tc.sets, ","), strings.Join(problems, "\n"))
			}
		})
	}
}

// TestPrometheusWithoutAgentNeedsNoAgentNamespace: monitoring alone
// creates nothing in pipeguard-agent and binds no scraper there.
func TestPrometheusWithoutAgentNeedsNoAgentNamespace(t *testing.T) {
	for _, o := range chartObjects(t, append(append([]string{}, imageSets...), "prometheus.enabled=true")...) {
		if o.GetNamespace() == "pipeguard-agent" || o.GetKind() == "PodMonitor" {
			t.Errorf("prometheus without the agent renders %s in %q", key(o), o.GetNamespace())
		}
		if o.GetKind() == "ClusterRoleBinding" && strings.Contains(mustYAML(t, o), "pipeguard-agent") {
			t.Errorf("ClusterRoleBinding %s names pipeguard-agent without the agent:\n%s", o.GetName(), mustYAML(t, o))
		}
	}
}

// TestValuesLandInObjects: image (tag, digest, pull policy), replicas and
// failurePolicy reach the fields they set.
func TestValuesLandInObjects(t *testing.T) {
	const digest = "sha256:" + "ab01ab01ab01ab01ab01ab01ab01ab01ab01ab01ab01ab01ab01ab01ab01ab01"
	objs := chartObjects(t, "image.repository=localhost:5000/pg", "image.digest="+digest, "image.pullPolicy=Always",
		"webhook.replicas=3", "webhook.failurePolicy=Ignore",
		"agent.enabled=true", "agent.image.repository=localhost:5000/pga", "agent.image.tag=v2", "agent.image.digest="+digest, "agent.image.pullPolicy=Never")
	objsByKey := index(t, "the chart", objs)

	dep := objsByKey["apps/Deployment/pipeguard-system/pipeguard-webhook"]
	if n, _, _ := unstructured.NestedInt64(dep.Object, "spec", "replicas"); n != 3 {
		t.Errorf("webhook.replicas=3: the Deployment has replicas %d", n)
	}
	c := container(t, dep)
	if c["image"] != "localhost:5000/pg@"+digest || c["imagePullPolicy"] != "Always" {
		t.Errorf("the manager runs image %v with pull policy %v, want localhost:5000/pg@%s and Always", c["image"], c["imagePullPolicy"], digest)
	}
	ds := objsByKey["apps/DaemonSet/pipeguard-agent/pipeguard-agent"]
	c = container(t, ds)
	if c["image"] != "localhost:5000/pga:v2@"+digest || c["imagePullPolicy"] != "Never" {
		t.Errorf("the agent runs image %v with pull policy %v, want localhost:5000/pga:v2@%s and Never", c["image"], c["imagePullPolicy"], digest)
	}
	vwc := objsByKey["admissionregistration.k8s.io/ValidatingWebhookConfiguration//pipeguard"]
	hooks, _, _ := unstructured.NestedSlice(vwc.Object, "webhooks")
	if len(hooks) < 6 {
		t.Fatalf("the webhook configuration has %d webhooks, want 6", len(hooks))
	}
	for _, h := range hooks {
		h := h.(map[string]any)
		if h["failurePolicy"] != "Ignore" {
			t.Errorf("webhook.failurePolicy=Ignore: webhook %v has failurePolicy %v", h["name"], h["failurePolicy"])
		}
	}
}

// TestNotesSayWhatRuns: NOTES.txt names the failure policy and the parts
// that were turned on.
func TestNotesSayWhatRuns(t *testing.T) {
	_, notes, err := template(t, append(append([]string{}, imageSets...), "prometheus.enabled=true", "agent.enabled=true")...)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"pipeguard-webhook runs in pipeguard-system with failurePolicy Fail",
		"kubectl -n pipeguard-agent get daemonset pipeguard-agent", "Prometheus scrapes the webhook and the agent"} {
		if !strings.Contains(notes, want) {
			t.Errorf("NOTES.txt lacks %q:\n%s", want, notes)
		}
	}
}

func container(t *testing.T, o *unstructured.Unstructured) map[string]any {
	t.Helper()
	cs, _, _ := unstructured.NestedSlice(o.Object, "spec", "template", "spec", "containers")
	if len(cs) == 0 {
		t.Fatalf("%s has no containers", key(o))
	}
	return cs[0].(map[string]any)
}
