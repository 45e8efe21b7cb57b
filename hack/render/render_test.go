package render_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/pipeguard/pipeguard/hack/render"
)

const config = "../../config"

// images returns the image of every container of the rendered objects.
func images(t *testing.T, dir string, opts render.Options) []string {
	t.Helper()
	objs, err := render.Objects(filepath.Join(config, dir), opts)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, o := range objs {
		cs, _, _ := unstructured.NestedSlice(o.Object, "spec", "template", "spec", "containers")
		for _, c := range cs {
			out = append(out, c.(map[string]any)["image"].(string))
		}
	}
	return out
}

func TestImages(t *testing.T) {
	const digest = "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
	cases := map[string]struct {
		dir  string
		opts render.Options
		want string
	}{
		"placeholder kept":  {"default", render.Options{}, render.WebhookRepository + ":" + render.PlaceholderTag + "@" + render.PlaceholderDigest},
		"tag":               {"default", render.Options{WebhookImage: "registry.example.com/pipeguard:v0.1.0"}, "registry.example.com/pipeguard:v0.1.0"},
		"registry port":     {"default", render.Options{WebhookImage: "localhost:5000/pipeguard"}, "localhost:5000/pipeguard:latest"},
		"digest":            {"default", render.Options{WebhookImage: "r.example.com/pg@" + digest}, "r.example.com/pg@" + digest},
		"agent":             {"agent", render.Options{AgentImage: "r.example.com/pga:v2"}, "r.example.com/pga:v2"},
		"agent image alone": {"default", render.Options{AgentImage: "r.example.com/pga:v2"}, render.WebhookRepository + ":" + render.PlaceholderTag + "@" + render.PlaceholderDigest},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := images(t, tc.dir, tc.opts)
			if len(got) != 1 || got[0] != tc.want {
				t.Errorf("images %q, want [%s]", got, tc.want)
			}
		})
	}
}

func TestErrors(t *testing.T) {
	notKustomization := t.TempDir()
	file := filepath.Join(t.TempDir(), "f.yaml")
	if err := os.WriteFile(file, []byte("a: b\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	broken := t.TempDir()
	if err := os.WriteFile(filepath.Join(broken, "kustomization.yaml"), []byte("resources: [missing.yaml]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	loop := t.TempDir()
	for _, d := range []string{"a", "b"} {
		other := map[string]string{"a": "../b", "b": "../a"}[d]
		if err := os.MkdirAll(filepath.Join(loop, d), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(loop, d, "kustomization.yaml"), []byte("resources: ["+other+"]\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	cases := map[string]struct {
		dir  string
		opts render.Options
		want []string
	}{
		"missing directory":    {filepath.Join(config, "nope"), render.Options{}, []string{"render ../../config/nope: no such overlay directory", "name a directory of config/ such as config/default"}},
		"no kustomization":     {notKustomization, render.Options{}, []string{"the directory has no kustomization.yaml; name a directory of config/ such as config/default"}},
		"a file":               {file, render.Options{}, []string{"not a directory"}},
		"broken kustomization": {broken, render.Options{}, []string{"kustomize:", "missing.yaml", "fix the kustomization (kubectl kustomize " + broken + " shows the same error)"}},
		"a loop":               {filepath.Join(loop, "a"), render.Options{}, []string{"kustomize:", "cycle"}},
		"malformed image":      {filepath.Join(config, "default"), render.Options{WebhookImage: "Registry/UPPER:tag"}, []string{"render ../../config/default: WebhookImage:"}},
		"placeholder refused": {filepath.Join(config, "default"), render.Options{RequireImages: true}, []string{
			"../../config/default runs the placeholder pipeguard image ghcr.io/pipeguard/pipeguard:image-not-set: no pipeguard image is published; build and push one and set WebhookImage"}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			_, err := render.Overlay(tc.dir, tc.opts)
			if err == nil {
				t.Fatal("no error")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error lacks %q:\n%v", w, err)
				}
			}
		})
	}
}

func TestRequireImagesWithImages(t *testing.T) {
	if _, err := render.Overlay(filepath.Join(config, "agent"), render.Options{AgentImage: "r.example.com/pga:v1", RequireImages: true}); err != nil {
		t.Fatal(err)
	}
	_, err := render.Overlay(filepath.Join(config, "agent"), render.Options{WebhookImage: "r.example.com/pg:v1", RequireImages: true})
	if err == nil || !strings.Contains(err.Error(), "placeholder pipeguard-agent image") || strings.Contains(err.Error(), "placeholder pipeguard image") {
		t.Fatalf("error %v, want one about the agent image only", err)
	}
}

// TestSameAsKubectlKustomize: Overlay renders what kubectl kustomize
// renders, for every overlay of config/.
func TestSameAsKubectlKustomize(t *testing.T) {
	assets := os.Getenv("KUBEBUILDER_ASSETS")
	if assets == "" {
		t.Skip("KUBEBUILDER_ASSETS is unset: no kubectl to compare with")
	}
	for _, dir := range []string{"default", "cert-manager", "prometheus", "prometheus-agent", "agent", "policyreport", "policyreport/openreports", "networkpolicy", "samples", "local"} {
		t.Run(dir, func(t *testing.T) {
			got, err := render.Overlay(filepath.Join(config, dir), render.Options{})
			if err != nil {
				t.Fatal(err)
			}
			want, err := exec.Command(filepath.Join(assets, "kubectl"), "kustomize", filepath.Join(config, dir)).Output()
			if err != nil {
				t.Fatal(err)
			}
			if string(got) == string(want) {
				return
			}
			// kubectl's kustomize gives the cluster-scoped
			// ValidatingAdmissionPolicy and its binding the namespace of
			// the kustomization, which the API server ignores; this
			// library knows them as cluster-scoped. Nothing else may
			// differ.
			g, err := render.Parse(got)
			if err != nil {
				t.Fatal(err)
			}
			w, err := render.Parse(want)
			if err != nil {
				t.Fatal(err)
			}
			if len(g) != len(w) {
				t.Fatalf("render.Overlay writes %d objects for config/%s, kubectl kustomize %d", len(g), dir, len(w))
			}
			for i := range w {
				if k := w[i].GetKind(); k == "ValidatingAdmissionPolicy" || k == "ValidatingAdmissionPolicyBinding" {
					w[i].SetNamespace("")
				}
				if !reflect.DeepEqual(g[i].Object, w[i].Object) {
					t.Errorf("config/%s: object %d differs:\nrender.Overlay: %v\nkubectl kustomize: %v", dir, i, g[i].Object, w[i].Object)
				}
			}
		})
	}
}
