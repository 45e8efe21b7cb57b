package helm_test

import (
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"

	"helm.sh/helm/v4/pkg/action"
	"helm.sh/helm/v4/pkg/chart/common"
	chart "helm.sh/helm/v4/pkg/chart/v2"
	"helm.sh/helm/v4/pkg/chart/v2/loader"
	release "helm.sh/helm/v4/pkg/release/v1"
	"helm.sh/helm/v4/pkg/strvals"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"github.com/pipeguard/pipeguard/hack/render"
)

// repoRoot is the module root, seen from this package.
const repoRoot = "../.."

// chartDir is the chart under test.
var chartDir = filepath.Join(repoRoot, "charts", "pipeguard")

// The images the tests install, as a user would name them.
const (
	webhookImage = "registry.example.com/pipeguard:v0.1.0"
	agentImage   = "registry.example.com/pipeguard-agent:v0.1.0"
)

// imageSets are the --set flags that name those images.
var imageSets = []string{
	"image.repository=registry.example.com/pipeguard", "image.tag=v0.1.0",
	"agent.image.repository=registry.example.com/pipeguard-agent", "agent.image.tag=v0.1.0",
}

// loadChart loads the chart from its folder, as helm install does.
func loadChart(t *testing.T) *chart.Chart {
	t.Helper()
	c, err := loader.Load(chartDir)
	if err != nil {
		t.Fatalf("loading %s: %v", chartDir, err)
	}
	return c
}

// values parses --set flags as the helm command does.
func values(t *testing.T, sets ...string) map[string]any {
	t.Helper()
	vals := map[string]any{}
	for _, s := range sets {
		if err := strvals.ParseInto(s, vals); err != nil {
			t.Fatalf("--set %s: %v", s, err)
		}
	}
	return vals
}

// template renders the chart as helm template does (a client-only dry
// run of helm install) and returns the manifest and NOTES.txt.
func template(t *testing.T, sets ...string) (string, string, error) {
	t.Helper()
	r, err := renderChart(t, loadChart(t), sets...)
	if err != nil {
		return "", "", err
	}
	return r.Manifest, r.Info.Notes, nil
}

// renderChart runs helm install as a client-only dry run of c.
func renderChart(t *testing.T, c *chart.Chart, sets ...string) (*release.Release, error) {
	t.Helper()
	install := action.NewInstall(action.NewConfiguration())
	install.DryRunStrategy = action.DryRunClient
	install.ReleaseName = "pipeguard"
	install.Namespace = "pipeguard-system"
	// The oldest Kubernetes the chart supports; helm template without
	// --kube-version uses the client-go version the helm binary was built
	// with, the SDK v1.20.
	install.KubeVersion = kubeVersion(t)
	rel, err := install.Run(c, values(t, sets...))
	if err != nil {
		return nil, err
	}
	r, ok := rel.(*release.Release)
	if !ok {
		t.Fatalf("helm install returned a %T, want a *release.Release", rel)
	}
	return r, nil
}

// chartObjects renders the chart with sets and parses the objects.
func chartObjects(t *testing.T, sets ...string) []*unstructured.Unstructured {
	t.Helper()
	manifest, _, err := template(t, sets...)
	if err != nil {
		t.Fatalf("helm template --set %s: %v", strings.Join(sets, ","), err)
	}
	objs, err := render.Parse([]byte(manifest))
	if err != nil {
		t.Fatalf("parsing the chart's manifest: %v", err)
	}
	return objs
}

// kubeVersion is the oldest Kubernetes the chart supports.
func kubeVersion(t *testing.T) *common.KubeVersion {
	t.Helper()
	v, err := common.ParseKubeVersion("v1.30.0")
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// overlayObjects renders overlays of config/ with the test images.
func overlayObjects(t *testing.T, overlays ...string) []*unstructured.Unstructured {
	t.Helper()
	var out []*unstructured.Unstructured
	seen := map[string]*unstructured.Unstructured{}
	for _, o := range overlays {
		objs, err := render.Objects(filepath.Join(repoRoot, "config", o), render.Options{WebhookImage: webhookImage, AgentImage: agentImage})
		if err != nil {
			t.Fatal(err)
		}
		for _, obj := range objs {
			// Two overlays may share an object (config/policyreport and
			// config/policyreport/openreports share their RBAC): applying
			// both applies it once, as long as they agree on it.
			if prev, ok := seen[key(obj)]; ok {
				if !reflect.DeepEqual(prev.Object, obj.Object) {
					t.Fatalf("config/%s renders %s differently from an overlay before it", o, key(obj))
				}
				continue
			}
			seen[key(obj)] = obj
			out = append(out, obj)
		}
	}
	return out
}

// key names an object: group/kind/namespace/name.
func key(o *unstructured.Unstructured) string {
	return fmt.Sprintf("%s/%s/%s/%s", o.GroupVersionKind().Group, o.GetKind(), o.GetNamespace(), o.GetName())
}

// index maps objects by key, failing on a duplicate.
func index(t *testing.T, what string, objs []*unstructured.Unstructured) map[string]*unstructured.Unstructured {
	t.Helper()
	m := map[string]*unstructured.Unstructured{}
	for _, o := range objs {
		if _, dup := m[key(o)]; dup {
			t.Fatalf("%s renders %s twice", what, key(o))
		}
		m[key(o)] = o
	}
	return m
}

// diffObjects compares two sets of objects, in any order, field by field,
// and returns what differs: missing and extra objects, and for each object
// in both but different, the two as YAML.
func diffObjects(t *testing.T, gotName string, got []*unstructured.Unstructured, wantName string, want []*unstructured.Unstructured) []string {
	t.Helper()
	g, w := index(t, gotName, got), index(t, wantName, want)
	var problems []string
	for k, wo := range w {
		go_, ok := g[k]
		if !ok {
			problems = append(problems, fmt.Sprintf("%s lacks %s, which %s has", gotName, k, wantName))
			continue
		}
		a, _ := yaml.Marshal(go_.Object)
		b, _ := yaml.Marshal(wo.Object)
		if string(a) != string(b) {
			problems = append(problems, fmt.Sprintf("%s differs:\n--- %s\n%s\n--- %s\n%s", k, gotName, a, wantName, b))
		}
	}
	for k := range g {
		if _, ok := w[k]; !ok {
			problems = append(problems, fmt.Sprintf("%s has %s, which %s has not", gotName, k, wantName))
		}
	}
	sort.Strings(problems)
	return problems
}

// assetsOrSkip returns KUBEBUILDER_ASSETS, or skips the test when it is
// unset (CI sets it).
func assetsOrSkip(t *testing.T) string {
	t.Helper()
	dir := os.Getenv("KUBEBUILDER_ASSETS")
	if dir == "" {
		t.Skip("KUBEBUILDER_ASSETS is unset: no kube-apiserver to install on (export KUBEBUILDER_ASSETS=\"$(hack/control-plane.sh | tail -n 1)\")")
	}
	return dir
}
