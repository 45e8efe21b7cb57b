package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/pipeguard/pipeguard/hack/render"
	"github.com/pipeguard/pipeguard/internal/testing/testenv"
)

const (
	repoRoot = "../.."
	sha      = "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
)

func TestWriteImages(t *testing.T) {
	tests := map[string]struct {
		img  string
		want render.Image
	}{
		"name":                   {"pipeguard", render.Image{NewName: "pipeguard", NewTag: "latest"}},
		"name:tag":               {"pipeguard:v1", render.Image{NewName: "pipeguard", NewTag: "v1"}},
		"registry:port/name":     {"registry:5000/pipeguard", render.Image{NewName: "registry:5000/pipeguard", NewTag: "latest"}},
		"registry:port/name:tag": {"localhost:5000/pipeguard:v1", render.Image{NewName: "localhost:5000/pipeguard", NewTag: "v1"}},
		"name@digest":            {"pipeguard@" + sha, render.Image{NewName: "pipeguard", Digest: sha}},
		"name:tag@digest":        {"pipeguard:v1@" + sha, render.Image{NewName: "pipeguard", NewTag: "v1", Digest: sha}},
		"localhost/name":         {"localhost/pipeguard", render.Image{NewName: "localhost/pipeguard", NewTag: "latest"}},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			out := t.TempDir()
			if err := write(options{Config: filepath.Join(repoRoot, "config"), Overlay: "default", Out: out, Img: tc.img, AgentImg: "agent:v2"}); err != nil {
				t.Fatal(err)
			}
			k := readKustomization(t, out)
			tc.want.Name = render.WebhookRepository
			if k.Images[0] != tc.want {
				t.Errorf("IMG=%s: images entry %+v, want %+v", tc.img, k.Images[0], tc.want)
			}
			if want := (render.Image{Name: render.AgentRepository, NewName: "agent", NewTag: "v2"}); k.Images[1] != want {
				t.Errorf("AGENT_IMG=agent:v2: images entry %+v, want %+v", k.Images[1], want)
			}
			// The resource is config/default, wherever the output is.
			res := filepath.Join(out, filepath.FromSlash(k.Resources[0]))
			if _, err := os.Stat(filepath.Join(res, "kustomization.yaml")); err != nil || filepath.Base(res) != "default" {
				t.Errorf("resources %v do not lead to config/default (%v)", k.Resources, err)
			}
		})
	}
}

func TestWriteRejects(t *testing.T) {
	tests := map[string]struct {
		o    options
		want string
	}{
		"empty IMG":             {options{Overlay: "default", Img: "", AgentImg: "agent:v1"}, `IMG: the image reference is empty`},
		"uppercase AGENT_IMG":   {options{Overlay: "default", Img: "pipeguard:v1", AgentImg: "Agent:v1"}, `AGENT_IMG: image reference "Agent:v1": repository "Agent" must be lowercase: write "agent"`},
		"bad digest":            {options{Overlay: "default", Img: "pipeguard@sha256:beef", AgentImg: "agent:v1"}, `IMG: image reference "pipeguard@sha256:beef": digest "sha256:beef" is not valid`},
		"unknown overlay":       {options{Overlay: "nope", Img: "pipeguard:v1", AgentImg: "agent:v1"}, `OVERLAY=nope: ../../config/nope has no kustomization.yaml; choose one of: agent, cert-manager, certs, certs/cert-manager, crd, default, local, manager, `},
		"overlay out of config": {options{Overlay: "../hack", Img: "pipeguard:v1", AgentImg: "agent:v1"}, `OVERLAY="../hack" is not a directory of ../../config`},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			tc.o.Config = filepath.Join(repoRoot, "config")
			tc.o.Out = t.TempDir()
			err := write(tc.o)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want one containing %q", err, tc.want)
			}
			if _, err := os.Stat(filepath.Join(tc.o.Out, "kustomization.yaml")); err == nil {
				t.Error("kustomization.yaml was written despite the error")
			}
		})
	}
}

// TestMakeRender runs `make render` as users do and checks the images
// kubectl kustomize renders.
func TestMakeRender(t *testing.T) {
	if _, err := exec.LookPath("make"); err != nil {
		t.Skip("no make on this machine")
	}
	kubectl := kubectlPath(t)
	tests := map[string]struct {
		img, agentImg string
		overlay       string
		want          string
	}{
		"registry port and tag": {"localhost:5000/pipeguard:v1", "localhost:5000/pipeguard-agent:v1", "default", "image: localhost:5000/pipeguard:v1\n"},
		"no tag":                {"registry.example.com/pipeguard", "x:1", "default", "image: registry.example.com/pipeguard:latest\n"},
		"digest":                {"localhost:5000/pipeguard@" + sha, "x:1", "default", "image: localhost:5000/pipeguard@" + sha + "\n"},
		"tag and digest":        {"localhost:5000/pipeguard:v1@" + sha, "x:1", "default", "image: localhost:5000/pipeguard:v1@" + sha + "\n"},
		"agent":                 {"x:1", "localhost:5000/pipeguard-agent:v1", "agent", "image: localhost:5000/pipeguard-agent:v1\n"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			out, err := makeRender(t, kubectl, "OVERLAY="+tc.overlay, "IMG="+tc.img, "AGENT_IMG="+tc.agentImg)
			if err != nil {
				t.Fatalf("make render: %v\n%s", err, out)
			}
			if !strings.Contains(out, tc.want) {
				t.Errorf("make render IMG=%s AGENT_IMG=%s OVERLAY=%s has no %q; its images:\n%s", tc.img, tc.agentImg, tc.overlay, strings.TrimSpace(tc.want), imageLines(out))
			}
		})
	}
	t.Run("a malformed IMG stops make and says why", func(t *testing.T) {
		out, err := makeRender(t, kubectl, "IMG=localhost:5000/PipeGuard:v1")
		if err == nil {
			t.Fatalf("make render succeeded:\n%s", out)
		}
		if want := `kustomization: IMG: image reference "localhost:5000/PipeGuard:v1": repository "PipeGuard" must be lowercase: write "pipeguard"`; !strings.Contains(out, want) {
			t.Errorf("make render said:\n%s\nwant it to contain:\n%s", out, want)
		}
	})
}

func makeRender(t *testing.T, kubectl string, vars ...string) (string, error) {
	t.Helper()
	args := append([]string{"--no-print-directory", "-C", repoRoot, "render", "DEPLOY_DIR=" + t.TempDir()}, vars...)
	cmd := exec.Command("make", args...)
	cmd.Env = append(os.Environ(), "KUBECTL="+kubectl)
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// kubectlPath returns the kubectl hack/control-plane.sh built, or skips the
// test (fails it when CI is true) when there is none.
func kubectlPath(t *testing.T) string {
	t.Helper()
	dir, err := testenv.AssetsDir()
	if err != nil {
		msg := "no kubectl to render with: " + err.Error() + "; export KUBEBUILDER_ASSETS=\"$(hack/control-plane.sh)\""
		if ci, _ := strconv.ParseBool(os.Getenv("CI")); ci {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	return filepath.Join(dir, "kubectl")
}

func readKustomization(t *testing.T, dir string) kustomization {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "kustomization.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var k kustomization
	if err := yaml.UnmarshalStrict(b, &k); err != nil {
		t.Fatalf("kustomization.yaml: %v\n%s", err, b)
	}
	if len(k.Images) != 2 || len(k.Resources) != 1 {
		t.Fatalf("kustomization.yaml:\n%s", b)
	}
	return k
}

func imageLines(out string) string {
	var lines []string
	for _, l := range strings.Split(out, "\n") {
		if strings.Contains(l, "image:") {
			lines = append(lines, strings.TrimSpace(l))
		}
	}
	return strings.Join(lines, "\n")
}
