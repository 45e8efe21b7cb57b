package install_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/pipeguard/pipeguard/internal/testing/testenv"
)

// placeholderDigest is the digest of the placeholder images config/ names:
// no image has it, so they can never be pulled.
const placeholderDigest = "sha256:0000000000000000000000000000000000000000000000000000000000000000"

// makeEnv is the environment make runs with: this one without the make
// variables the tests set themselves, plus extra.
func makeEnv(extra ...string) []string {
	var env []string
	for _, e := range os.Environ() {
		name, _, _ := strings.Cut(e, "=")
		switch name {
		case "IMG", "AGENT_IMG", "OVERLAY", "DEPLOY_DIR", "ROLLOUT_TIMEOUT", "KUBECTL", "MAKEFLAGS", "WEBHOOK_URL", "WEBHOOK_CA_FILE", "ADMISSION_DIR":
			continue
		}
		env = append(env, e)
	}
	return append(env, extra...)
}

// containerImage returns the image of the first container of the pod
// template of the workload kind/name in the rendered manifests.
func containerImage(t *testing.T, manifests []byte, kind, name string) string {
	t.Helper()
	w := find(t, objects(t, manifests), kind, name)
	return field(t, w.Object, "spec", "template", "spec", "containers").([]any)[0].(map[string]any)["image"].(string)
}

// TestPlaceholderImages: config/ as it is, applied without make, names
// images that cannot be pulled and say why.
func TestPlaceholderImages(t *testing.T) {
	assets, err := testenv.AssetsDir()
	if err != nil {
		t.Skipf("no kubectl to render with: %v", err)
	}
	k := kubectl{bin: filepath.Join(assets, "kubectl"), kubeconfig: os.DevNull}
	if got, want := containerImage(t, k.render(t, "default"), "Deployment", serviceName), "ghcr.io/pipeguard/pipeguard:image-not-set@"+placeholderDigest; got != want {
		t.Errorf("config/default runs %s, want the placeholder %s", got, want)
	}
	if got, want := containerImage(t, k.render(t, "agent"), "DaemonSet", "pipeguard-agent"), "ghcr.io/pipeguard/pipeguard-agent:image-not-set@"+placeholderDigest; got != want {
		t.Errorf("config/agent runs %s, want the placeholder %s", got, want)
	}
}

// TestMakeRenderImages runs make render as users do: it refuses an overlay
// whose image is not set, is the unpublished default or is malformed, says
// what to do, and renders exactly the image named otherwise.
func TestMakeRenderImages(t *testing.T) {
	if _, err := exec.LookPath("make"); err != nil {
		t.Skip("no make on this machine")
	}
	assets, err := testenv.AssetsDir()
	if err != nil {
		t.Skipf("no kubectl to render with: %v", err)
	}
	env := makeEnv("KUBECTL=" + filepath.Join(assets, "kubectl"))
	render := func(t *testing.T, vars ...string) (string, int) {
		t.Helper()
		return runCommand(t, env, "make", append([]string{"--no-print-directory", "render", "DEPLOY_DIR=" + t.TempDir()}, vars...)...)
	}

	refused := map[string]struct {
		vars []string
		want string
	}{
		"IMG unset": {nil, `make render: IMG is not set, and config/default runs the pipeguard image.
No pipeguard image is published: build one, push it to a registry your nodes can pull from, and name it:
  make docker-build IMG=registry.example.com/pipeguard:v0.1.0
  docker push registry.example.com/pipeguard:v0.1.0
  make render OVERLAY=default IMG=registry.example.com/pipeguard:v0.1.0
`},
		"IMG the unpublished default": {[]string{"IMG=ghcr.io/pipeguard/pipeguard:dev"}, `make render: IMG=ghcr.io/pipeguard/pipeguard:dev is not published anywhere, and config/default runs it as the pipeguard image.
No pipeguard image is published: build one, push it to a registry your nodes can pull from, and name it:
  make docker-build IMG=registry.example.com/pipeguard:v0.1.0
`},
		"IMG the placeholder": {[]string{"OVERLAY=cert-manager", "IMG=ghcr.io/pipeguard/pipeguard:image-not-set@" + placeholderDigest},
			`make render: IMG=ghcr.io/pipeguard/pipeguard:image-not-set@` + placeholderDigest + ` is not published anywhere, and config/cert-manager runs it as the pipeguard image.
`},
		"IMG malformed": {[]string{"IMG=registry.example.com/PipeGuard:v1"},
			`kustomization: IMG: image reference "registry.example.com/PipeGuard:v1": repository "PipeGuard" must be lowercase: write "pipeguard"` + "\n"},
		"AGENT_IMG unset for config/agent": {[]string{"OVERLAY=agent", "IMG=registry.example.com/pipeguard:v1"}, `make render: AGENT_IMG is not set, and config/agent runs the pipeguard-agent image.
No pipeguard-agent image is published: build one, push it to a registry your nodes can pull from, and name it:
  make docker-build-agent AGENT_IMG=registry.example.com/pipeguard-agent:v0.1.0   # docker buildx, pushes
  make render OVERLAY=agent AGENT_IMG=registry.example.com/pipeguard-agent:v0.1.0
`},
		"AGENT_IMG the unpublished default": {[]string{"OVERLAY=agent", "AGENT_IMG=ghcr.io/pipeguard/pipeguard-agent:dev"},
			`make render: AGENT_IMG=ghcr.io/pipeguard/pipeguard-agent:dev is not published anywhere, and config/agent runs it as the pipeguard-agent image.
`},
	}
	for name, tc := range refused {
		t.Run("refuses "+name, func(t *testing.T) {
			out, code := render(t, tc.vars...)
			if code != 2 {
				t.Fatalf("make render %s exited %d, want 2:\n%s", strings.Join(tc.vars, " "), code, out)
			}
			if !strings.Contains(out, tc.want) {
				t.Errorf("make render %s said:\n%s\nwant it to contain:\n%s", strings.Join(tc.vars, " "), out, tc.want)
			}
			if strings.Contains(out, "apiVersion:") {
				t.Errorf("make render %s printed manifests although it refused:\n%s", strings.Join(tc.vars, " "), out)
			}
		})
	}

	accepted := map[string]struct {
		vars       []string
		kind, name string // the workload whose image is checked
		want       string
	}{
		"config/default with IMG": {[]string{"IMG=registry.example.com/pipeguard:v0.1.0"}, "Deployment", serviceName, "registry.example.com/pipeguard:v0.1.0"},
		"config/cert-manager with a digest": {[]string{"OVERLAY=cert-manager", "IMG=localhost:5000/pipeguard@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"},
			"Deployment", serviceName, "localhost:5000/pipeguard@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"},
		"config/agent with AGENT_IMG and no IMG":         {[]string{"OVERLAY=agent", "AGENT_IMG=registry.example.com/pipeguard-agent:v0.1.0"}, "DaemonSet", "pipeguard-agent", "registry.example.com/pipeguard-agent:v0.1.0"},
		"config/prometheus runs no image and needs none": {[]string{"OVERLAY=prometheus"}, "", "", ""},
	}
	for name, tc := range accepted {
		t.Run(name, func(t *testing.T) {
			out, code := render(t, tc.vars...)
			if code != 0 {
				t.Fatalf("make render %s exited %d:\n%s", strings.Join(tc.vars, " "), code, out)
			}
			if tc.kind == "" {
				if strings.Contains(out, "image:") {
					t.Errorf("make render %s names images:\n%s", strings.Join(tc.vars, " "), imageLines(out))
				}
				return
			}
			if got := containerImage(t, []byte(out), tc.kind, tc.name); got != tc.want {
				t.Errorf("make render %s: %s %s runs %s, want %s", strings.Join(tc.vars, " "), tc.kind, tc.name, got, tc.want)
			}
			if lines := imageLines(out); lines != "image: "+tc.want {
				t.Errorf("make render %s names the images\n%s\nwant only %s", strings.Join(tc.vars, " "), lines, tc.want)
			}
		})
	}
}

// imageLines returns the image: lines of rendered manifests, trimmed.
func imageLines(out string) string {
	var lines []string
	for _, l := range strings.Split(out, "\n") {
		if strings.HasPrefix(strings.TrimSpace(l), "image:") {
			lines = append(lines, strings.TrimSpace(l))
		}
	}
	return strings.Join(lines, "\n")
}

// TestDeployRegistersWebhookAfterRollout runs make deploy against a real
// kube-apiserver: without IMG it applies nothing; with it, the
// ValidatingWebhookConfiguration is applied only once the Deployment has
// rolled out, and not at all when the rollout times out. There is no
// controller manager here, so the test reports the rollout as the
// Deployment controller would, by writing the Deployment's status.
func TestDeployRegistersWebhookAfterRollout(t *testing.T) {
	if _, err := exec.LookPath("make"); err != nil {
		t.Skip("no make on this machine")
	}
	k := startCluster(t)
	env := makeEnv("KUBECTL="+k.bin, "KUBECONFIG="+k.kubeconfig)
	deployArgs := func(t *testing.T, vars ...string) []string {
		return append([]string{"--no-print-directory", "deploy", "DEPLOY_DIR=" + t.TempDir()}, vars...)
	}
	exists := func(t *testing.T, args ...string) bool {
		t.Helper()
		out, err := k.run(t, nil, append([]string{"get"}, args...)...)
		if err != nil && !strings.Contains(out, "NotFound") {
			t.Fatal(err)
		}
		return err == nil
	}
	image := func(t *testing.T) string {
		t.Helper()
		out, err := k.run(t, nil, "get", "deployment", serviceName, "--namespace", systemNamespace, "--output", "jsonpath={.spec.template.spec.containers[0].image}")
		if err != nil {
			return ""
		}
		return out
	}

	t.Run("without IMG nothing is applied", func(t *testing.T) {
		out, code := runCommand(t, env, "make", deployArgs(t)...)
		if code != 2 {
			t.Fatalf("make deploy exited %d, want 2:\n%s", code, out)
		}
		want := `make deploy: IMG is not set, and config/default runs the pipeguard image.
No pipeguard image is published: build one, push it to a registry your nodes can pull from, and name it:
  make docker-build IMG=registry.example.com/pipeguard:v0.1.0
  docker push registry.example.com/pipeguard:v0.1.0
  make deploy OVERLAY=default IMG=registry.example.com/pipeguard:v0.1.0
Nothing was applied: pods that cannot pull their image never start, and a fail-closed webhook without them rejects every request it guards.
`
		if !strings.Contains(out, want) {
			t.Errorf("make deploy said:\n%s\nwant it to contain:\n%s", out, want)
		}
		if exists(t, "namespace", systemNamespace) || exists(t, "validatingwebhookconfiguration", webhookConfig) {
			t.Error("make deploy without IMG applied objects")
		}
	})

	t.Run("a rollout that times out leaves the webhook configuration unapplied", func(t *testing.T) {
		out, code := runCommand(t, env, "make", deployArgs(t, "IMG=localhost:5000/pipeguard:v1", "ROLLOUT_TIMEOUT=2s")...)
		if code != 2 {
			t.Fatalf("make deploy exited %d, want 2:\n%s", code, out)
		}
		for _, want := range []string{
			"make deploy: applying config/default without ValidatingWebhookConfiguration/pipeguard\n",
			"make deploy: waiting up to 2s (ROLLOUT_TIMEOUT) for deployment/pipeguard-webhook in namespace pipeguard-system to roll out\n",
			"make deploy: deployment/pipeguard-webhook in namespace pipeguard-system did not roll out within 2s, so ValidatingWebhookConfiguration/pipeguard was not applied: nothing new is rejected, and a webhook configuration of an earlier install stays as it was.\n" +
				"See why with:\n  kubectl --namespace pipeguard-system get pods\n  kubectl --namespace pipeguard-system describe pods\n" +
				"ErrImagePull or ImagePullBackOff means the nodes cannot pull IMG=localhost:5000/pipeguard:v1: push it, or name an image they can pull. Then run make deploy again (ROLLOUT_TIMEOUT=10m to wait longer).\n",
		} {
			if !strings.Contains(out, want) {
				t.Errorf("make deploy said:\n%s\nwant it to contain:\n%s", out, want)
			}
		}
		if got := image(t); got != "localhost:5000/pipeguard:v1" {
			t.Errorf("the Deployment runs %q, want localhost:5000/pipeguard:v1", got)
		}
		if exists(t, "validatingwebhookconfiguration", webhookConfig) {
			t.Error("the webhook configuration was applied although no replica rolled out")
		}
	})

	t.Run("the webhook configuration is applied once the Deployment has rolled out", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, "make", deployArgs(t, "IMG=localhost:5000/pipeguard:v2", "ROLLOUT_TIMEOUT=3m")...)
		var out syncBuffer
		cmd.Dir, cmd.Env, cmd.Stdout, cmd.Stderr = repoRoot, env, &out, &out
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		running := func() {
			t.Helper()
			select {
			case err := <-done:
				t.Fatalf("make deploy ended (%v) before the Deployment rolled out:\n%s", err, out.String())
			default:
			}
		}

		eventually(t, 2*time.Minute, "make deploy updates the Deployment to localhost:5000/pipeguard:v2", func() bool {
			running()
			return image(t) == "localhost:5000/pipeguard:v2"
		})
		// make deploy now waits for the rollout, as kubectl rollout status
		// says, with the webhook configuration not applied.
		eventually(t, 2*time.Minute, "kubectl rollout status waits for the Deployment", func() bool {
			running()
			return strings.Contains(out.String(), "Waiting for deployment ")
		})
		if exists(t, "validatingwebhookconfiguration", webhookConfig) {
			t.Fatalf("the webhook configuration was applied before the Deployment rolled out:\n%s", out.String())
		}
		running()

		// The Deployment controller's part: every replica updated and
		// available.
		gen := k.must(t, nil, "get", "deployment", serviceName, "--namespace", systemNamespace, "--output", "jsonpath={.metadata.generation}")
		k.must(t, nil, "patch", "deployment", serviceName, "--namespace", systemNamespace, "--subresource=status", "--type=merge", "--patch",
			`{"status":{"observedGeneration":`+gen+`,"replicas":2,"updatedReplicas":2,"readyReplicas":2,"availableReplicas":2}}`)

		select {
		case err := <-done:
			if err != nil {
				t.Fatalf("make deploy: %v\n%s", err, out.String())
			}
		case <-time.After(2 * time.Minute):
			t.Fatalf("make deploy still runs 2 minutes after the rollout:\n%s", out.String())
		}
		if !exists(t, "validatingwebhookconfiguration", webhookConfig) {
			t.Fatalf("make deploy succeeded without applying the webhook configuration:\n%s", out.String())
		}
		s := out.String()
		rolled := strings.Index(s, `deployment "pipeguard-webhook" successfully rolled out`)
		applied := strings.Index(s, "make deploy: applying ValidatingWebhookConfiguration/pipeguard\n")
		if rolled < 0 || applied < rolled {
			t.Errorf("make deploy did not report the rollout and then the webhook configuration:\n%s", s)
		}
	})
}

// TestUndeployRemovesWebhookConfigurationFirst runs make undeploy with a
// kubectl that records its calls: the
// webhook configuration is deleted before anything else.
func TestUndeployRemovesWebhookConfigurationFirst(t *testing.T) {
	if _, err := exec.LookPath("make"); err != nil {
		t.Skip("no make on this machine")
	}
	assets, err := testenv.AssetsDir()
	if err != nil {
		t.Skipf("no kubectl to render with: %v", err)
	}
	dir := t.TempDir()
	calls := filepath.Join(dir, "calls")
	fake := filepath.Join(dir, "kubectl")
	script := "#!/bin/sh\necho \"$@\" >> '" + calls + "'\n" +
		"if [ \"$1\" = kustomize ]; then exec '" + filepath.Join(assets, "kubectl") + "' \"$@\"; fi\n"
	if err := os.WriteFile(fake, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	deployDir := t.TempDir()
	out, code := runCommand(t, makeEnv("KUBECTL="+fake), "make", "--no-print-directory", "undeploy", "DEPLOY_DIR="+deployDir)
	if code != 0 {
		t.Fatalf("make undeploy exited %d:\n%s", code, out)
	}
	b, err := os.ReadFile(calls)
	if err != nil {
		t.Fatal(err)
	}
	// The manifests are built without kubectl (hack/render).
	want := "delete --ignore-not-found -f " + deployDir + "/webhooks.yaml\n" +
		"delete --ignore-not-found -f " + deployDir + "/undeploy.yaml\n"
	if string(b) != want {
		t.Fatalf("make undeploy ran kubectl\n%s\nwant\n%s", b, want)
	}
	webhooks, err := os.ReadFile(filepath.Join(deployDir, "webhooks.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	objs := objects(t, webhooks)
	if len(objs) != 1 || objs[0].GetKind() != "ValidatingWebhookConfiguration" || objs[0].GetName() != webhookConfig {
		t.Errorf("make undeploy deleted first:\n%s\nwant the ValidatingWebhookConfiguration %s alone", webhooks, webhookConfig)
	}
}

// TestDocumentedOverlaySetsImage renders the overlay docs/install.md gives
// for installing without make: it must replace the placeholder with the
// image it names.
func TestDocumentedOverlaySetsImage(t *testing.T) {
	assets, err := testenv.AssetsDir()
	if err != nil {
		t.Skipf("no kubectl to render with: %v", err)
	}
	doc, err := os.ReadFile(filepath.Join(repoRoot, "docs", "install.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, after, ok := strings.Cut(string(doc), "cat > my-pipeguard/kustomization.yaml <<'END'\n")
	overlay, _, ok2 := strings.Cut(after, "\nEND\n")
	if !ok || !ok2 || !strings.Contains(overlay, "- ../config/default\n") {
		t.Fatal("docs/install.md has no cat > my-pipeguard/kustomization.yaml <<'END' ... END overlay of ../config/default")
	}
	config, err := filepath.Abs(filepath.Join(repoRoot, "config", "default"))
	if err != nil {
		t.Fatal(err)
	}
	// Kustomize takes relative resource paths only.
	dir := t.TempDir()
	rel, err := filepath.Rel(dir, config)
	if err != nil {
		t.Fatal(err)
	}
	overlay = strings.Replace(overlay, "- ../config/default\n", "- "+filepath.ToSlash(rel)+"\n", 1)
	if err := os.WriteFile(filepath.Join(dir, "kustomization.yaml"), []byte(overlay), 0o644); err != nil {
		t.Fatal(err)
	}
	k := kubectl{bin: filepath.Join(assets, "kubectl"), kubeconfig: os.DevNull}
	out := k.must(t, nil, "kustomize", dir)
	if got, want := containerImage(t, []byte(out), "Deployment", serviceName), "registry.example.com/pipeguard:v0.1.0"; got != want {
		t.Errorf("the overlay of docs/install.md runs %s, want %s", got, want)
	}
}
