package render_test

import (
	"encoding/base64"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/pipeguard/pipeguard/hack/render"
)

// testCA is a PEM block of type CERTIFICATE; AdmissionFiles checks only
// that a certificate is there, kube-apiserver parses it (test/install).
const testCA = "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n"

func manifestAdmission(t *testing.T) []*unstructured.Unstructured {
	t.Helper()
	objs, err := render.Objects(filepath.Join(config, "manifest-admission"), render.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return objs
}

// TestAdmissionFiles: config/manifest-admission becomes the three files
// kube-apiserver loads, every webhook calling the URL with the CA, every
// name with the reserved suffix, and nothing else of config/webhook or
// config/agent.
func TestAdmissionFiles(t *testing.T) {
	const url = "https://10.0.0.10:9443/validate"
	files, err := render.AdmissionFiles(manifestAdmission(t), render.FileOptions{URL: url, CABundle: []byte(testCA)})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for n := range files {
		names = append(names, n)
	}
	sort.Strings(names)
	if want := []string{"admission-configuration.yaml", "policies/pipeguard-audit-anchor.yaml", "webhooks/pipeguard.yaml"}; !reflect.DeepEqual(names, want) {
		t.Fatalf("files %q, want %q", names, want)
	}

	cfg := string(files["admission-configuration.yaml"])
	for _, want := range []string{
		"kind: AdmissionConfiguration",
		"- name: ValidatingAdmissionWebhook\n  configuration:\n    apiVersion: apiserver.config.k8s.io/v1\n    kind: WebhookAdmissionConfiguration\n    staticManifestsDir: /etc/kubernetes/pipeguard/webhooks\n",
		"- name: ValidatingAdmissionPolicy\n  configuration:\n    apiVersion: apiserver.config.k8s.io/v1\n    kind: ValidatingAdmissionPolicyConfiguration\n    staticManifestsDir: /etc/kubernetes/pipeguard/policies\n",
	} {
		if !strings.Contains(cfg, want) {
			t.Errorf("admission-configuration.yaml lacks\n%s\nin\n%s", want, cfg)
		}
	}

	hooks, err := render.Parse(files["webhooks/pipeguard.yaml"])
	if err != nil || len(hooks) != 1 || hooks[0].GetName() != "pipeguard.static.k8s.io" {
		t.Fatalf("webhooks/pipeguard.yaml holds %v (%v), want ValidatingWebhookConfiguration pipeguard.static.k8s.io", hooks, err)
	}
	list, _, _ := unstructured.NestedSlice(hooks[0].Object, "webhooks")
	if len(list) != 8 {
		t.Errorf("%d webhooks, want config/webhook's 8", len(list))
	}
	ca := base64.StdEncoding.EncodeToString([]byte(testCA))
	for _, h := range list {
		h := h.(map[string]any)
		if cc := h["clientConfig"]; !reflect.DeepEqual(cc, map[string]any{"url": url, "caBundle": ca}) {
			t.Errorf("webhook %s calls %v, want %s with the CA", h["name"], cc, url)
		}
	}

	policy, err := render.Parse(files["policies/pipeguard-audit-anchor.yaml"])
	if err != nil || len(policy) != 2 {
		t.Fatalf("policies/pipeguard-audit-anchor.yaml holds %d objects (%v), want the policy and its binding", len(policy), err)
	}
	if policy[0].GetKind() != "ValidatingAdmissionPolicy" || policy[1].GetKind() != "ValidatingAdmissionPolicyBinding" {
		t.Errorf("policies/pipeguard-audit-anchor.yaml holds %s and %s, want the policy first", policy[0].GetKind(), policy[1].GetKind())
	}
	for _, o := range policy {
		if o.GetName() != "pipeguard-audit-anchor.static.k8s.io" {
			t.Errorf("%s %s, want the name pipeguard-audit-anchor.static.k8s.io", o.GetKind(), o.GetName())
		}
	}
	if got, _, _ := unstructured.NestedString(policy[1].Object, "spec", "policyName"); got != "pipeguard-audit-anchor.static.k8s.io" {
		t.Errorf("the binding binds %q", got)
	}
	exprs, _, _ := unstructured.NestedSlice(policy[1].Object, "spec", "matchResources", "namespaceSelector", "matchExpressions")
	if want := []any{map[string]any{"key": "kubernetes.io/metadata.name", "operator": "In", "values": []any{"pipeguard-agent"}}}; !reflect.DeepEqual(exprs, want) {
		t.Errorf("the binding selects namespaces %v, want only the agent's, pipeguard-agent", exprs)
	}
}

// TestAdmissionFilesRefusals: what kube-apiserver would refuse at start,
// or what would call the wrong webhook, is refused with what to do.
func TestAdmissionFilesRefusals(t *testing.T) {
	rename := func(kind, name string) func([]*unstructured.Unstructured) {
		return func(objs []*unstructured.Unstructured) {
			for _, o := range objs {
				if o.GetKind() == kind {
					o.SetName(name)
				}
			}
		}
	}
	good := render.FileOptions{URL: "https://10.0.0.10:9443/validate", CABundle: []byte(testCA)}
	cases := map[string]struct {
		edit func([]*unstructured.Unstructured)
		opts render.FileOptions
		want string
	}{
		"no URL": {opts: render.FileOptions{CABundle: []byte(testCA)},
			want: "no webhook URL: a webhook loaded from a file cannot call a Service"},
		"http": {opts: render.FileOptions{URL: "http://10.0.0.10:9443/validate", CABundle: []byte(testCA)},
			want: `webhook URL "http://10.0.0.10:9443/validate": kube-apiserver calls webhooks only over https`},
		"another path": {opts: render.FileOptions{URL: "https://10.0.0.10:9443/", CABundle: []byte(testCA)},
			want: "pipeguard-webhook answers reviews at the path /validate"},
		"query": {opts: render.FileOptions{URL: "https://10.0.0.10:9443/validate?x=1", CABundle: []byte(testCA)},
			want: "kube-apiserver refuses a user, query or fragment"},
		"no CA": {opts: render.FileOptions{URL: good.URL},
			want: "no CA bundle"},
		"a key for a CA": {opts: render.FileOptions{URL: good.URL, CABundle: []byte("-----BEGIN EC PRIVATE KEY-----\nMIIB\n-----END EC PRIVATE KEY-----\n")},
			want: "the CA bundle holds no PEM CERTIFICATE block"},
		"relative directory": {opts: render.FileOptions{Dir: "etc/pipeguard", URL: good.URL, CABundle: []byte(testCA)},
			want: `the directory of the admission configuration "etc/pipeguard" is not absolute`},
		"webhook without the suffix": {edit: rename("ValidatingWebhookConfiguration", "pipeguard"), opts: good,
			want: "ValidatingWebhookConfiguration pipeguard: kube-apiserver loads from files only objects named <name>.static.k8s.io"},
		"policy without the suffix": {edit: rename("ValidatingAdmissionPolicy", "pipeguard-audit-anchor"), opts: good,
			want: "ValidatingAdmissionPolicy pipeguard-audit-anchor: kube-apiserver loads from files only objects named <name>.static.k8s.io"},
		"binding of a policy not in the files": {edit: func(objs []*unstructured.Unstructured) {
			for _, o := range objs {
				if o.GetKind() == "ValidatingAdmissionPolicyBinding" {
					_ = unstructured.SetNestedField(o.Object, "other.static.k8s.io", "spec", "policyName")
				}
			}
		}, opts: good,
			want: `ValidatingAdmissionPolicyBinding pipeguard-audit-anchor.static.k8s.io binds policy "other.static.k8s.io", which is not among the files`},
		"another kind": {edit: func(objs []*unstructured.Unstructured) {
			objs[0].SetKind("MutatingAdmissionPolicy")
		}, opts: good,
			want: "the admission configuration files hold only admissionregistration.k8s.io/v1 ValidatingWebhookConfigurations, ValidatingAdmissionPolicies and their bindings"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			objs := manifestAdmission(t)
			if tc.edit != nil {
				tc.edit(objs)
			}
			files, err := render.AdmissionFiles(objs, tc.opts)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("AdmissionFiles = %d files, %v; want an error containing %q", len(files), err, tc.want)
			}
		})
	}
}

// TestManifestAdmissionWebhookOverlay: config/manifest-admission/webhook is
// config/default without the webhook configuration kube-apiserver loads
// from a file, and without the rotation and routing that would keep it in
// step through the API, or the permissions they need.
func TestManifestAdmissionWebhookOverlay(t *testing.T) {
	objs, err := render.Objects(filepath.Join(config, "manifest-admission", "webhook"), render.Options{})
	if err != nil {
		t.Fatal(err)
	}
	var deployment *unstructured.Unstructured
	for _, o := range objs {
		switch {
		case o.GetKind() == "ValidatingWebhookConfiguration":
			t.Errorf("ValidatingWebhookConfiguration %s is applied through the API: kube-apiserver loads it from a file", o.GetName())
		case o.GetKind() == "Secret":
			t.Errorf("Secret %s is applied: the certificate is the admin's, of a CA that stays the same", o.GetName())
		case strings.HasPrefix(o.GetName(), "pipeguard-webhook-cert") || strings.HasPrefix(o.GetName(), "pipeguard-webhook-routing"):
			t.Errorf("%s %s grants what only the API's webhook configuration needs", o.GetKind(), o.GetName())
		case o.GetKind() == "Deployment":
			deployment = o
		}
	}
	if deployment == nil {
		t.Fatal("no Deployment")
	}
	containers, _, _ := unstructured.NestedSlice(deployment.Object, "spec", "template", "spec", "containers")
	env := map[string]any{}
	for _, e := range containers[0].(map[string]any)["env"].([]any) {
		e := e.(map[string]any)
		env[e["name"].(string)] = e["value"]
	}
	if env["CERT_ROTATION"] != "false" || env["WEBHOOK_CONFIG_NAME"] != "" {
		t.Errorf("the manager runs with CERT_ROTATION=%v WEBHOOK_CONFIG_NAME=%v, want false and empty", env["CERT_ROTATION"], env["WEBHOOK_CONFIG_NAME"])
	}
	volumes, _, _ := unstructured.NestedSlice(deployment.Object, "spec", "template", "spec", "volumes")
	if got := volumes[0].(map[string]any)["secret"].(map[string]any)["secretName"]; got != "pipeguard-webhook-cert" {
		t.Errorf("the manager mounts Secret %v, want pipeguard-webhook-cert", got)
	}
}
