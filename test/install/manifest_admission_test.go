package install_test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/pipeguard/pipeguard/hack/render"
	"github.com/pipeguard/pipeguard/internal/testing/testenv"
)

// TestManifestAdmission starts kube-apiserver with the admission
// configuration files of config/manifest-admission, as docs/install.md
// installs them on a self-managed control plane, and pipeguard-webhook
// answering at the URL they name. The files pass the API server's own
// validation (it would not start otherwise); the webhook rejects a pod that
// mounts a CSI Proxy pipe; the configuration is invisible to the API and
// cannot be deleted, replaced or shadowed through it; and the agent's
// audit anchor policy, loaded from the files too, is enforced.
func TestManifestAdmission(t *testing.T) {
	testenv.RequireAssets(t)
	port := freePort(t)
	certDir := t.TempDir()
	ca := localCert(t, certDir)

	// The files as make render OVERLAY=manifest-admission writes them, for
	// a directory of this test's instead of /etc/kubernetes/pipeguard.
	dir := t.TempDir()
	objs, err := render.Objects(filepath.Join(repoRoot, "config", "manifest-admission"), render.Options{})
	if err != nil {
		t.Fatal(err)
	}
	files, err := render.AdmissionFiles(objs, render.FileOptions{
		Dir: dir, URL: fmt.Sprintf("https://127.0.0.1:%d/validate", port), CABundle: ca,
	})
	if err != nil {
		t.Fatal(err)
	}
	for name, b := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}

	env := testenv.Start(t, testenv.Options{
		CRDDirectoryPaths: []string{filepath.Join(repoRoot, "config", "crd", "bases")},
		APIServerArgs: map[string][]string{
			"admission-control-config-file": {filepath.Join(dir, render.AdmissionConfigFile)},
			// On by default since 1.37 (beta); named so that the test says
			// what it depends on.
			"feature-gates": {"ManifestBasedAdmissionControlConfig=true"},
		},
	})
	assets, err := testenv.AssetsDir()
	if err != nil {
		t.Fatal(err)
	}
	kubeconfig := env.KubeconfigFile(t)
	k := kubectl{bin: filepath.Join(assets, "kubectl"), kubeconfig: kubeconfig}

	p := startWebhook(t, buildWebhook(t), "--kubeconfig", kubeconfig,
		"--webhook-host", "127.0.0.1", "--webhook-port", fmt.Sprint(port), "--webhook-cert-path", certDir,
		// The configuration is no object of the API: nothing to inject a
		// CA into or keep in step.
		"--webhook-config-name=")
	p.waitReady(t)
	k.must(t, nil, "apply", "-f", "test/install/testdata/namespaces.yaml")

	badPodDenied := func(t *testing.T) {
		t.Helper()
		out, err := k.run(t, nil, "apply", "-f", "test/install/testdata/bad-pod.yaml")
		want := `admission webhook "pods.pipeguard.io" denied the request: [protected-pipe-mount] container "driver" mounts \\.\pipe\csi-proxy-disk-v1 through volume "pipe", but it is not HostProcess and namespace "team-a" is not allowed; to allow it, label the namespace pipeguard.io/allow-csi-proxy=true, or run the container as HostProcess`
		if err == nil || !strings.Contains(out, want) {
			t.Fatalf("kubectl apply of the bad pod said:\n%s\nwant it refused with:\n%s", out, want)
		}
	}

	t.Run("the webhook from the files refuses a pod mounting a CSI Proxy pipe and admits an allowed one", func(t *testing.T) {
		badPodDenied(t)
		if out := k.must(t, nil, "apply", "-f", "test/install/testdata/good-pod.yaml"); !strings.Contains(out, "pod/driver created") {
			t.Errorf("kubectl apply of the good pod said %q, want pod/driver created", out)
		}
	})

	t.Run("config/manifest-admission/webhook applies beside the files, with no webhook configuration of the API", func(t *testing.T) {
		k.must(t, nil, "create", "namespace", "pipeguard-system")
		k.must(t, nil, "-n", "pipeguard-system", "create", "secret", "tls", "pipeguard-webhook-cert",
			"--cert", filepath.Join(certDir, "tls.crt"), "--key", filepath.Join(certDir, "tls.key"))
		manifests, err := render.Overlay(filepath.Join(repoRoot, "config", "manifest-admission", "webhook"),
			render.Options{WebhookImage: "registry.example.com/pipeguard:v1", RequireImages: true})
		if err != nil {
			t.Fatal(err)
		}
		k.must(t, manifests, "apply", "--server-side", "--field-manager", fieldManager, "-f", "-")
		if out := k.must(t, nil, "get", "validatingwebhookconfigurations", "-o", "name"); strings.TrimSpace(out) != "" {
			t.Errorf("the API has webhook configurations:\n%s", out)
		}
		if out := k.must(t, nil, "-n", "pipeguard-system", "get", "secret", "pipeguard-webhook-cert", "-o", "jsonpath={.data.tls\\.crt}"); out == "" {
			t.Error("applying the overlay emptied the admin's certificate Secret")
		}
	})

	t.Run("the API neither shows nor deletes the configuration from the files", func(t *testing.T) {
		for _, c := range []struct{ resource, name string }{
			{"validatingwebhookconfigurations.admissionregistration.k8s.io", "pipeguard.static.k8s.io"},
			{"validatingadmissionpolicies.admissionregistration.k8s.io", "pipeguard-audit-anchor.static.k8s.io"},
			{"validatingadmissionpolicybindings.admissionregistration.k8s.io", "pipeguard-audit-anchor.static.k8s.io"},
		} {
			want := fmt.Sprintf(`Error from server (NotFound): %s %q not found`, c.resource, c.name)
			for _, verb := range []string{"get", "delete"} {
				out, err := k.run(t, nil, verb, c.resource, c.name)
				if err == nil || strings.TrimSpace(strings.SplitN(out, "\n", 2)[0]) != want {
					t.Errorf("kubectl %s %s %s said:\n%s\nwant: %s", verb, c.resource, c.name, out, want)
				}
			}
			if out := k.must(t, nil, "get", c.resource, "-o", "name"); strings.Contains(out, "pipeguard") {
				t.Errorf("kubectl get %s lists the configuration from the files:\n%s", c.resource, out)
			}
		}
		// Deleting everything the API has leaves the files in force.
		k.must(t, nil, "delete", "validatingwebhookconfigurations", "--all")
		badPodDenied(t)
	})

	t.Run("the API refuses an object of the reserved name, so none can replace or shadow the files", func(t *testing.T) {
		const reserved = `names ending with ".static.k8s.io" are reserved for static manifest-based configurations and cannot be managed via the API`
		for _, c := range []struct{ kind, name, doc string }{
			{"ValidatingWebhookConfiguration", "pipeguard.static.k8s.io", `apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingWebhookConfiguration
metadata: {name: pipeguard.static.k8s.io}
webhooks: []
`},
			{"ValidatingAdmissionPolicy", "pipeguard-audit-anchor.static.k8s.io", `apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicy
metadata: {name: pipeguard-audit-anchor.static.k8s.io}
spec:
  matchConstraints:
    resourceRules: [{apiGroups: [coordination.k8s.io], apiVersions: ["*"], operations: [CREATE], resources: [leases]}]
  validations: [{expression: "true"}]
`},
			{"ValidatingAdmissionPolicyBinding", "pipeguard-audit-anchor.static.k8s.io", `apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicyBinding
metadata: {name: pipeguard-audit-anchor.static.k8s.io}
spec: {policyName: pipeguard-audit-anchor.static.k8s.io, validationActions: [Deny]}
`},
		} {
			want := fmt.Sprintf(`metadata.name: Invalid value: %q: %s`, c.name, reserved)
			out, err := k.run(t, []byte(c.doc), "create", "-f", "-")
			if err == nil || !strings.Contains(out, want) {
				t.Errorf("kubectl create of %s %s said:\n%s\nwant it refused with: %s", c.kind, c.name, out, want)
			}
		}
		badPodDenied(t)
	})

	t.Run("the audit anchor policy from the files is enforced in the agent's namespace", func(t *testing.T) {
		k.must(t, nil, "create", "namespace", "pipeguard-agent")
		lease := func(ns string) []byte {
			return []byte(fmt.Sprintf(`apiVersion: coordination.k8s.io/v1
kind: Lease
metadata:
  name: pipeguard-audit-node-1
  namespace: %s
  annotations: {audit.pipeguard.io/node: node-1, audit.pipeguard.io/seq: "7"}
`, ns))
		}
		out, err := k.run(t, lease("pipeguard-agent"), "create", "-f", "-")
		want := `ValidatingAdmissionPolicy 'pipeguard-audit-anchor.static.k8s.io' with binding 'pipeguard-audit-anchor.static.k8s.io' denied request: the audit anchor of node node-1 is written only by the pipeguard-agent ServiceAccount, not by `
		if err == nil || !strings.Contains(out, want) {
			t.Errorf("a cluster admin's anchor for node-1 said:\n%s\nwant it refused with: %s", out, want)
		}
		// The binding confines the policy to the agent's namespace.
		if out := k.must(t, lease("default"), "create", "-f", "-"); !strings.Contains(out, "lease.coordination.k8s.io/pipeguard-audit-node-1 created") {
			t.Errorf("a Lease of that name in namespace default said %q, want it created", out)
		}
	})

	// From here on the files change, as an upgrade or removal on a
	// control-plane node changes them: kube-apiserver watches the
	// directories and reloads without a restart.
	webhookFile := filepath.Join(dir, filepath.FromSlash(render.WebhooksDir), "pipeguard.yaml")
	t.Run("an edit kube-apiserver refuses leaves the last good files in force", func(t *testing.T) {
		broken := filepath.Join(dir, filepath.FromSlash(render.WebhooksDir), "broken.yaml")
		if err := os.WriteFile(broken, []byte("apiVersion: admissionregistration.k8s.io/v1\nkind: ValidatingWebhookConfiguration\nmetadata: {name: broken}\nwebhooks: []\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		eventually(t, 2*time.Minute, "kube-apiserver reports a failed reload of the webhook files", func() bool {
			return reloadFailures(t, k) > 0
		})
		badPodDenied(t)
		if err := os.Remove(broken); err != nil {
			t.Fatal(err)
		}
	})

	t.Run("removing the webhook file from the directory switches the webhook off", func(t *testing.T) {
		if err := os.Remove(webhookFile); err != nil {
			t.Fatal(err)
		}
		eventually(t, 2*time.Minute, "the bad pod passes a server-side dry run", func() bool {
			_, err := k.run(t, nil, "apply", "--dry-run=server", "-f", "test/install/testdata/bad-pod.yaml")
			return err == nil
		})
		if err := os.WriteFile(webhookFile, files[render.WebhooksDir+"/pipeguard.yaml"], 0o644); err != nil {
			t.Fatal(err)
		}
		eventually(t, 2*time.Minute, "the restored file refuses the bad pod again", func() bool {
			_, err := k.run(t, nil, "apply", "--dry-run=server", "-f", "test/install/testdata/bad-pod.yaml")
			return err != nil
		})
		badPodDenied(t)
	})

	t.Run("moving the directory away instead of removing its files keeps the last files in force", func(t *testing.T) {
		before := reloadFailures(t, k)
		if err := os.Rename(filepath.Dir(webhookFile), filepath.Dir(webhookFile)+".old"); err != nil {
			t.Fatal(err)
		}
		eventually(t, 2*time.Minute, "kube-apiserver reports a failed reload of the webhook files", func() bool {
			return reloadFailures(t, k) > before
		})
		badPodDenied(t)
	})
}

// reloadFailures sums the failed reloads of webhook files that
// kube-apiserver reports on /metrics.
func reloadFailures(t *testing.T, k kubectl) int {
	t.Helper()
	n := 0
	for _, line := range strings.Split(k.must(t, nil, "get", "--raw", "/metrics"), "\n") {
		if strings.HasPrefix(line, "apiserver_manifest_admission_config_controller_automatic_reloads_total{") &&
			strings.Contains(line, `plugin="ValidatingAdmissionWebhook"`) && strings.Contains(line, `status="failure"`) {
			var v float64
			if _, err := fmt.Sscan(line[strings.LastIndex(line, " ")+1:], &v); err == nil {
				n += int(v)
			}
		}
	}
	return n
}

// TestMakeRenderManifestAdmission runs make render OVERLAY=manifest-admission
// as docs/install.md does: it refuses to go on without the URL or the CA,
// saying what to set, writes the files for ADMISSION_DIR and says where
// they go; make deploy and undeploy refuse the overlay and apply nothing.
func TestMakeRenderManifestAdmission(t *testing.T) {
	if _, err := exec.LookPath("make"); err != nil {
		t.Skip("no make")
	}
	ca := filepath.Join(t.TempDir(), "ca.crt")
	if err := os.WriteFile(ca, localCert(t, t.TempDir()), 0o600); err != nil {
		t.Fatal(err)
	}
	out := t.TempDir()
	render := func(args ...string) (string, int) {
		return runCommand(t, makeEnv(), "make", append([]string{"--no-print-directory", "render", "OVERLAY=manifest-admission", "DEPLOY_DIR=" + out}, args...)...)
	}

	for name, c := range map[string]struct {
		args []string
		want string
	}{
		"no URL": {[]string{"WEBHOOK_CA_FILE=" + ca},
			"kustomization: config/manifest-admission: WEBHOOK_URL is not set: a webhook loaded from a file cannot call a Service, so name the https URL kube-apiserver reaches pipeguard-webhook at, such as WEBHOOK_URL=https://10.0.0.10:9443/validate"},
		"no CA": {[]string{"WEBHOOK_URL=https://10.96.0.50/validate"},
			"kustomization: config/manifest-admission: WEBHOOK_CA_FILE is not set: name the PEM file of the CA that signed pipeguard-webhook's serving certificate"},
		"a Service's name is no URL": {[]string{"WEBHOOK_URL=pipeguard-webhook.pipeguard-system.svc", "WEBHOOK_CA_FILE=" + ca},
			`webhook URL "pipeguard-webhook.pipeguard-system.svc": kube-apiserver calls webhooks only over https; give https://<host>:<port>/validate`},
	} {
		t.Run(name, func(t *testing.T) {
			got, code := render(c.args...)
			if code == 0 || !strings.Contains(got, c.want) {
				t.Errorf("make render exited %d:\n%s\nwant a failure saying: %s", code, got, c.want)
			}
		})
	}

	got, code := render("WEBHOOK_URL=https://10.96.0.50/validate", "WEBHOOK_CA_FILE="+ca, "ADMISSION_DIR=/srv/admission")
	if code != 0 {
		t.Fatalf("make render exited %d:\n%s", code, got)
	}
	for _, want := range []string{
		"copy them to /srv/admission on every control-plane node:\n  /srv/admission/admission-configuration.yaml\n  /srv/admission/policies/pipeguard-audit-anchor.yaml\n  /srv/admission/webhooks/pipeguard.yaml\n",
		"start kube-apiserver with --admission-control-config-file=/srv/admission/admission-configuration.yaml",
		"name: pipeguard.static.k8s.io",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("make render said:\n%s\nwant it to contain:\n%s", got, want)
		}
	}
	cfg, err := os.ReadFile(filepath.Join(out, "manifest-admission", "admission-configuration.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(cfg), "staticManifestsDir: /srv/admission/webhooks\n") {
		t.Errorf("admission-configuration.yaml does not name /srv/admission/webhooks:\n%s", cfg)
	}

	for _, action := range []string{"deploy", "undeploy"} {
		got, code := runCommand(t, makeEnv("KUBECTL=/nonexistent/kubectl"), "make", "--no-print-directory", action, "OVERLAY=manifest-admission", "DEPLOY_DIR="+out)
		want := "make " + action + ": config/manifest-admission is loaded by kube-apiserver from files on the control-plane nodes, not applied through the API: nothing was changed."
		if code == 0 || !strings.Contains(got, want) {
			t.Errorf("make %s exited %d:\n%s\nwant it refused with: %s", action, code, got, want)
		}
	}
}
