package install_test

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"
)

const (
	systemNamespace = "pipeguard-system"
	certSecret      = "pipeguard-webhook-cert"
	webhookConfig   = "pipeguard"
	serviceName     = "pipeguard-webhook"
	// fieldManager is the one a cluster admin's kubectl apply uses.
	fieldManager = "pipeguard-install"
)

// TestInstall installs pipeguard on a real kube-apiserver the way the
// README says, then runs pipeguard-webhook against it: first with
// certificate rotation, as the Deployment runs it (no kubelet here, so the
// test plays the kubelet and copies the Secret into the mounted
// directory), then outside the cluster per config/local, where it must
// reject a pod that mounts a CSI Proxy pipe and admit an allowed one.
func TestInstall(t *testing.T) {
	k := startCluster(t)
	kubeconfig := k.kubeconfig
	webhookBin := buildWebhook(t)

	steps := []struct {
		name string
		run  func(t *testing.T)
	}{
		{"config/default renders with every name in step", func(t *testing.T) { checkDefault(t, k) }},
		{"config/cert-manager swaps the manager's rotation for cert-manager", func(t *testing.T) { checkCertManager(t, k) }},
		{"config/prometheus renders a ServiceMonitor and the dashboard", func(t *testing.T) {
			objs := objects(t, k.render(t, "prometheus"))
			find(t, objs, "ServiceMonitor", serviceName)
			cm := find(t, objs, "ConfigMap", "pipeguard-grafana-dashboard")
			if cm.GetLabels()["grafana_dashboard"] != "1" {
				t.Errorf("dashboard ConfigMap labels %v lack grafana_dashboard: \"1\"", cm.GetLabels())
			}
		}},
		{"config/default applies cleanly with server-side apply", func(t *testing.T) {
			out := k.must(t, k.render(t, "default"), "apply", "--server-side", "--field-manager", fieldManager, "-f", "-")
			t.Logf("kubectl apply --server-side -k config/default:\n%s", out)
			k.must(t, nil, "wait", "--for=condition=Established", "--timeout=60s", "crd/pipeaccesspolicies.pipeguard.io")
		}},
		{"config/policyreport and config/policyreport/openreports render the report CRDs and RBAC for both groups bound to the webhook's ServiceAccount, and apply", func(t *testing.T) {
			def := objects(t, k.render(t, "default"))
			sa := find(t, def, "ServiceAccount", serviceName)
			// config/default grants no access to reports: that is what this
			// overlay adds.
			for _, o := range def {
				if rules, _ := json.Marshal(o.Object["rules"]); strings.Contains(string(rules), "wgpolicyk8s.io") || strings.Contains(string(rules), "openreports.io") {
					t.Errorf("config/default's %s %s grants access to reports: %s", o.GetKind(), o.GetName(), rules)
				}
			}
			for dir, crds := range map[string]string{
				"policyreport":             "clusterpolicyreports.wgpolicyk8s.io policyreports.wgpolicyk8s.io",
				"policyreport/openreports": "clusterreports.openreports.io reports.openreports.io",
				"policyreport/rbac":        "",
			} {
				objs := objects(t, k.render(t, dir))
				var names []string
				for _, o := range objs {
					if o.GetKind() == "CustomResourceDefinition" {
						names = append(names, o.GetName())
					}
				}
				sort.Strings(names)
				if got := strings.Join(names, " "); got != crds {
					t.Errorf("config/%s has the CRDs %q, want %q", dir, got, crds)
				}
				rules, _ := json.Marshal(find(t, objs, "ClusterRole", "pipeguard-webhook-policyreports").Object["rules"])
				for _, want := range []string{`"apiGroups":["wgpolicyk8s.io"]`, `"resources":["policyreports","clusterpolicyreports"]`, `"apiGroups":["openreports.io"]`, `"resources":["reports","clusterreports"]`} {
					if !strings.Contains(string(rules), want) {
						t.Errorf("config/%s's ClusterRole rules %s lack %s", dir, rules, want)
					}
				}
				subj := field(t, find(t, objs, "ClusterRoleBinding", "pipeguard-webhook-policyreports").Object, "subjects").([]any)[0].(map[string]any)
				if subj["kind"] != "ServiceAccount" || subj["name"] != sa.GetName() || subj["namespace"] != sa.GetNamespace() {
					t.Errorf("config/%s binds %v, want config/default's ServiceAccount %s/%s", dir, subj, sa.GetNamespace(), sa.GetName())
				}
			}
			k.must(t, k.render(t, "policyreport"), "apply", "--server-side", "--field-manager", fieldManager, "-f", "-")
			k.must(t, nil, "wait", "--for=condition=Established", "--timeout=60s", "crd/policyreports.wgpolicyk8s.io", "crd/clusterpolicyreports.wgpolicyk8s.io")
			// Next to it: the shared RBAC applies twice the same.
			k.must(t, k.render(t, "policyreport/openreports"), "apply", "--server-side", "--field-manager", fieldManager, "-f", "-")
			k.must(t, nil, "wait", "--for=condition=Established", "--timeout=60s", "crd/reports.openreports.io", "crd/clusterreports.openreports.io")
		}},
		{"every sample passes a server-side dry run", func(t *testing.T) { drySamples(t, k) }},
		{"certificate rotation fills the Secret, injects the CA, and serves only once the files exist", func(t *testing.T) {
			rotateCerts(t, k, kubeconfig, webhookBin)
		}},
		{"re-applying config/default (an upgrade) keeps the issued certificate", func(t *testing.T) {
			before := secretData(t, k)
			bundle := caBundles(t, k)
			k.must(t, k.render(t, "default"), "apply", "--server-side", "--field-manager", fieldManager, "-f", "-")
			if after := secretData(t, k); after["tls.crt"] != before["tls.crt"] || after["ca.crt"] != before["ca.crt"] {
				t.Fatal("re-applying config/default changed the certificate in the Secret")
			}
			if got := caBundles(t, k); strings.Join(got, ",") != strings.Join(bundle, ",") {
				t.Fatal("re-applying config/default changed the webhooks' caBundle")
			}
		}},
		{"config/local: pipeguard-webhook outside the cluster rejects a bad pod, admits a good one, and config/agent applies", func(t *testing.T) {
			runLocal(t, k, kubeconfig, webhookBin)
		}},
	}
	for _, s := range steps {
		if !t.Run(s.name, s.run) {
			return
		}
	}
}

// checkDefault checks that the replacements of config/default wired the
// objects to each other.
func checkDefault(t *testing.T, k kubectl) {
	objs := objects(t, k.render(t, "default"))
	vwc := find(t, objs, "ValidatingWebhookConfiguration", webhookConfig)
	for _, w := range field(t, vwc.Object, "webhooks").([]any) {
		w := w.(map[string]any)
		name := w["name"]
		svc := field(t, w, "clientConfig", "service").(map[string]any)
		if svc["name"] != serviceName || svc["namespace"] != systemNamespace || svc["path"] != "/validate" {
			t.Errorf("webhook %s calls %v, want service %s/%s path /validate", name, svc, systemNamespace, serviceName)
		}
		if w["failurePolicy"] != "Fail" || w["sideEffects"] != "None" {
			t.Errorf("webhook %s: failurePolicy %v, sideEffects %v; want Fail, None", name, w["failurePolicy"], w["sideEffects"])
		}
		if len(field(t, w, "matchConditions").([]any)) == 0 {
			t.Errorf("webhook %s has no matchConditions: every object would reach the webhook", name)
		}
		if name == "persistentvolumes.pipeguard.io" {
			continue // cluster-scoped: no namespace to exclude
		}
		sel, _ := json.Marshal(field(t, w, "namespaceSelector"))
		if want := fmt.Sprintf(`"operator":"NotIn","values":["%s"]`, systemNamespace); !strings.Contains(string(sel), want) {
			t.Errorf("webhook %s namespaceSelector %s does not exclude %s", name, sel, systemNamespace)
		}
	}

	dep := find(t, objs, "Deployment", serviceName)
	pod := field(t, dep.Object, "spec", "template", "spec").(map[string]any)
	c := field(t, pod, "containers").([]any)[0].(map[string]any)
	env := map[string]any{}
	for _, e := range c["env"].([]any) {
		e := e.(map[string]any)
		env[e["name"].(string)] = e["value"]
	}
	for name, want := range map[string]string{
		"CERT_ROTATION": "true", "CERT_SECRET_NAME": certSecret, "SERVICE_NAME": serviceName, "WEBHOOK_CONFIG_NAME": webhookConfig,
	} {
		if env[name] != want {
			t.Errorf("manager env %s = %v, want %q", name, env[name], want)
		}
	}
	if got := field(t, pod, "volumes").([]any)[0].(map[string]any)["secret"].(map[string]any)["secretName"]; got != certSecret {
		t.Errorf("manager mounts Secret %v, want %s", got, certSecret)
	}
	for path, want := range map[string]any{
		"spec.replicas": int64(2),
		"spec.template.spec.securityContext.runAsNonRoot":        true,
		"spec.template.spec.securityContext.seccompProfile.type": "RuntimeDefault",
		"spec.template.spec.priorityClassName":                   "system-cluster-critical",
		"spec.template.spec.nodeSelector.kubernetes\\.io/os":     "linux",
	} {
		if got := field(t, dep.Object, splitPath(path)...); fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("Deployment %s = %v, want %v", path, got, want)
		}
	}
	sc := c["securityContext"].(map[string]any)
	if sc["readOnlyRootFilesystem"] != true || sc["allowPrivilegeEscalation"] != false {
		t.Errorf("manager securityContext %v: want a read-only root filesystem and no privilege escalation", sc)
	}
	find(t, objs, "PodDisruptionBudget", serviceName)
	find(t, objs, "ClusterRole", "pipeguard-allowance-granter")
	find(t, objs, "Secret", certSecret)
}

// checkCertManager checks that the cert-manager overlay leaves no trace of
// the manager's own rotation and has cert-manager inject the CA.
func checkCertManager(t *testing.T, k kubectl) {
	objs := objects(t, k.render(t, "cert-manager"))
	for _, o := range objs {
		if o.GetName() == certSecret && o.GetKind() != "Certificate" {
			t.Errorf("config/cert-manager still has %s %s, which cert-manager owns or rotation alone needs", o.GetKind(), o.GetName())
		}
	}
	cert := find(t, objs, "Certificate", certSecret)
	if got := fmt.Sprint(field(t, cert.Object, "spec", "dnsNames")); got != "[pipeguard-webhook.pipeguard-system.svc pipeguard-webhook.pipeguard-system.svc.cluster.local]" {
		t.Errorf("Certificate dnsNames %s", got)
	}
	vwc := find(t, objs, "ValidatingWebhookConfiguration", webhookConfig)
	if got := vwc.GetAnnotations()["cert-manager.io/inject-ca-from"]; got != systemNamespace+"/"+certSecret {
		t.Errorf("inject-ca-from %q, want %s/%s", got, systemNamespace, certSecret)
	}
	dep := find(t, objs, "Deployment", serviceName)
	env, _ := json.Marshal(field(t, dep.Object, "spec", "template", "spec", "containers"))
	if !strings.Contains(string(env), `{"name":"CERT_ROTATION","value":"false"}`) {
		t.Errorf("manager still rotates its certificate: %s", env)
	}
}

// splitPath splits a dotted path; `\.` stands for a dot inside a key.
func splitPath(p string) []string {
	parts := strings.Split(strings.ReplaceAll(p, `\.`, "\x00"), ".")
	for i := range parts {
		parts[i] = strings.ReplaceAll(parts[i], "\x00", ".")
	}
	return parts
}

// drySamples has the API server validate every sample without storing it.
func drySamples(t *testing.T, k kubectl) {
	files, err := filepath.Glob(filepath.Join(repoRoot, "config", "samples", "*.yaml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no samples in config/samples (%v)", err)
	}
	for _, f := range files {
		if filepath.Base(f) == "kustomization.yaml" {
			continue
		}
		rel := filepath.Join("config", "samples", filepath.Base(f))
		out := k.must(t, nil, "apply", "--dry-run=server", "-f", rel)
		if !strings.Contains(out, "(server dry run)") {
			t.Errorf("kubectl apply --dry-run=server -f %s: %s", rel, out)
		}
	}
	// The samples kustomization; the agent's sample policy is a ConfigMap
	// in the agent's namespace and is dry-run once config/agent is applied.
	k.must(t, k.render(t, "samples"), "apply", "--dry-run=server", "-f", "-")
}

// rotateCerts runs pipeguard-webhook with --cert-rotation against the
// installed manifests.
func rotateCerts(t *testing.T, k kubectl, kubeconfig, bin string) {
	certDir := t.TempDir()
	port := freePort(t)
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	p := startWebhook(t, bin, "--kubeconfig", kubeconfig,
		"--cert-rotation", "--namespace", systemNamespace,
		"--webhook-host", "127.0.0.1", "--webhook-port", fmt.Sprint(port), "--webhook-cert-path", certDir)

	eventually(t, time.Minute, "the rotator fills Secret "+certSecret, func() bool {
		d := secretData(t, k)
		return d["tls.crt"] != "" && d["tls.key"] != "" && d["ca.crt"] != ""
	})
	data := secretData(t, k)

	// Nothing is mounted yet: not ready, saying why, and not listening.
	code, body := p.readiness("/readyz/pipeguard")
	if code != http.StatusInternalServerError || !strings.Contains(body, "serving certificate not ready: waiting for Secret pipeguard-system/pipeguard-webhook-cert") {
		t.Fatalf("/readyz/pipeguard before the certificate is mounted: %d %q", code, body)
	}
	if listening(addr) {
		t.Fatalf("the webhook server listens on %s before its certificate exists", addr)
	}

	// The kubelet's part: project the Secret into the mounted directory.
	for _, name := range []string{"tls.crt", "tls.key", "ca.crt"} {
		b, err := base64.StdEncoding.DecodeString(data[name])
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(certDir, name), b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	// Once its files are mounted, the replica injects the CA.
	eventually(t, time.Minute, "every webhook has the CA as its caBundle", func() bool {
		for _, b := range caBundles(t, k) {
			if b != data["ca.crt"] {
				return false
			}
		}
		return true
	})
	p.waitReady(t)

	// The server presents the issued certificate, valid for the Service.
	ca, _ := base64.StdEncoding.DecodeString(data["ca.crt"])
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(ca)
	conn, err := tls.Dial("tcp", addr, &tls.Config{RootCAs: pool, ServerName: serviceName + "." + systemNamespace + ".svc"})
	if err != nil {
		t.Fatalf("TLS to the webhook with the injected CA and the Service's name: %v", err)
	}
	conn.Close()
	if err := p.stop(); err != nil {
		t.Fatal(err)
	}
}

// secretData returns the base64 data of the certificate Secret.
func secretData(t *testing.T, k kubectl) map[string]string {
	var s struct {
		Data map[string]string `json:"data"`
	}
	out := k.must(t, nil, "get", "secret", "-n", systemNamespace, certSecret, "-o", "json")
	if err := json.Unmarshal([]byte(out), &s); err != nil {
		t.Fatal(err)
	}
	return s.Data
}

// caBundles returns the caBundle of every webhook of the configuration.
func caBundles(t *testing.T, k kubectl) []string {
	out := k.must(t, nil, "get", "validatingwebhookconfiguration", webhookConfig, "-o", `jsonpath={range .webhooks[*]}{.clientConfig.caBundle}{"\n"}{end}`)
	return strings.Split(strings.TrimSuffix(out, "\n"), "\n")
}

// runLocal installs config/local and runs pipeguard-webhook as its
// comment says, on a free port rather than 9443.
func runLocal(t *testing.T, k kubectl, kubeconfig, bin string) {
	port := freePort(t)
	local := string(k.render(t, "local"))
	const url = "https://127.0.0.1:9443/validate"
	if n := strings.Count(local, "url: "+url); n != 8 {
		t.Fatalf("config/local points %d webhooks at %s, want all 8", n, url)
	}
	if strings.Contains(local, "service:") {
		t.Fatal("config/local still calls a Service")
	}
	local = strings.ReplaceAll(local, url, fmt.Sprintf("https://127.0.0.1:%d/validate", port))
	k.must(t, []byte(local), "apply", "--server-side", "--field-manager", fieldManager, "-f", "-")

	certDir := t.TempDir()
	ca := base64.StdEncoding.EncodeToString(localCert(t, certDir))
	var patch []string
	for i := range 6 {
		patch = append(patch, fmt.Sprintf(`{"op":"add","path":"/webhooks/%d/clientConfig/caBundle","value":"%s"}`, i, ca))
	}
	k.must(t, nil, "patch", "validatingwebhookconfiguration", webhookConfig, "--type=json", "-p", "["+strings.Join(patch, ",")+"]")

	p := startWebhook(t, bin, "--kubeconfig", kubeconfig,
		"--webhook-host", "127.0.0.1", "--webhook-port", fmt.Sprint(port), "--webhook-cert-path", certDir)
	p.waitReady(t)
	k.must(t, nil, "apply", "-f", "test/install/testdata/namespaces.yaml")

	out, err := k.run(t, nil, "apply", "-f", "test/install/testdata/bad-pod.yaml")
	if err == nil {
		t.Fatalf("the bad pod was admitted:\n%s", out)
	}
	for _, want := range []string{
		`admission webhook "pods.pipeguard.io" denied the request`,
		`[protected-pipe-mount] container "driver" mounts \\.\pipe\csi-proxy-disk-v1 through volume "pipe", but it is not HostProcess and namespace "team-a" is not allowed; to allow it, label the namespace pipeguard.io/allow-csi-proxy=true, or run the container as HostProcess`,
	} {
		if !strings.Contains(out, want) {
			t.Errorf("kubectl apply of the bad pod said:\n%s\nwant it to contain:\n%s", out, want)
		}
	}
	if out := k.must(t, nil, "apply", "-f", "test/install/testdata/good-pod.yaml"); !strings.Contains(out, "pod/driver created") {
		t.Errorf("kubectl apply of the good pod said %q, want pod/driver created", out)
	}

	// The README's "Verify" dry run is rejected as it says.
	readme, err := os.ReadFile(filepath.Join(repoRoot, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, after, ok := strings.Cut(string(readme), "kubectl apply --dry-run=server -f - <<'END'\n")
	verify, _, ok2 := strings.Cut(after, "\nEND\n")
	if !ok || !ok2 {
		t.Fatal("README.md has no kubectl apply --dry-run=server -f - <<'END' ... END example")
	}
	out, err = k.run(t, []byte(verify), "apply", "--dry-run=server", "-f", "-")
	if want := `admission webhook "pods.pipeguard.io" denied the request: [protected-pipe-mount] container "c" mounts \\.\pipe\csi-proxy-disk-v1`; err == nil || !strings.Contains(out, want) {
		t.Errorf("the README's verification said:\n%s\nwant it to contain:\n%s", out, want)
	}

	// Creating a labelled Namespace is reviewed too (and fails closed
	// while no webhook answers), so the agent goes in with the webhook up.
	k.must(t, k.render(t, "agent"), "apply", "--server-side", "--field-manager", fieldManager, "-f", "-")
	k.must(t, k.render(t, "samples/agent"), "apply", "--dry-run=server", "-f", "-")
}
