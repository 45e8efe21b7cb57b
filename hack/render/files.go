package render

import (
	"encoding/base64"
	"encoding/pem"
	"fmt"
	"net/url"
	"path"
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"
)

// StaticSuffix is the suffix kube-apiserver requires of every object it
// loads from a manifest file, and refuses in the names of objects written
// through the API (k8s.io/apiserver's manifest.StaticConfigSuffix).
const StaticSuffix = ".static.k8s.io"

// DefaultAdmissionDir is where the files of the manifest-admission overlay
// go on every control-plane node, unless FileOptions.Dir says otherwise.
const DefaultAdmissionDir = "/etc/kubernetes/pipeguard"

// The files of the admission configuration, relative to FileOptions.Dir:
// the AdmissionConfiguration for kube-apiserver's
// --admission-control-config-file, and one directory per admission plugin,
// since each plugin reads only its own kinds from its staticManifestsDir.
const (
	AdmissionConfigFile = "admission-configuration.yaml"
	WebhooksDir         = "webhooks"
	PoliciesDir         = "policies"
)

// FileOptions says how the admission configuration files call pipeguard.
type FileOptions struct {
	// Dir is the absolute directory the files are copied to on every
	// control-plane node; the AdmissionConfiguration names its
	// subdirectories. Empty means DefaultAdmissionDir.
	Dir string
	// URL is the https URL every webhook calls: a webhook loaded from a file
	// cannot name a Service, so the address must be one kube-apiserver
	// reaches from its own network.
	URL string
	// CABundle is the PEM of the CA that signed pipeguard-webhook's serving
	// certificate, written into every webhook's clientConfig.
	CABundle []byte
}

// AdmissionFiles turns the objects of the manifest-admission overlay into
// the files kube-apiserver loads, keyed by their path relative to
// opts.Dir: admission-configuration.yaml, and each
// ValidatingWebhookConfiguration under webhooks/, each
// ValidatingAdmissionPolicy with its bindings under policies/. Every
// webhook is pointed at opts.URL with opts.CABundle. It refuses what
// kube-apiserver would refuse at start, naming the object: a name without
// the .static.k8s.io suffix, a binding of a policy that is not among the
// files, any other kind.
func AdmissionFiles(objs []*unstructured.Unstructured, opts FileOptions) (map[string][]byte, error) {
	dir := opts.Dir
	if dir == "" {
		dir = DefaultAdmissionDir
	}
	if !path.IsAbs(dir) {
		return nil, fmt.Errorf("the directory of the admission configuration %q is not absolute: kube-apiserver needs absolute paths, such as %s", dir, DefaultAdmissionDir)
	}
	if err := checkURL(opts.URL); err != nil {
		return nil, err
	}
	if err := checkCABundle(opts.CABundle); err != nil {
		return nil, err
	}

	out := map[string][]byte{}
	policies := map[string][]*unstructured.Unstructured{}
	var bindings []*unstructured.Unstructured
	for _, o := range objs {
		name := o.GetName()
		if !strings.HasSuffix(name, StaticSuffix) {
			return nil, fmt.Errorf("%s %s: kube-apiserver loads from files only objects named <name>%s", o.GetKind(), name, StaticSuffix)
		}
		switch o.GetAPIVersion() + " " + o.GetKind() {
		case "admissionregistration.k8s.io/v1 ValidatingWebhookConfiguration":
			w := o.DeepCopy()
			if err := callURL(w, opts); err != nil {
				return nil, err
			}
			b, err := toYAML(w)
			if err != nil {
				return nil, err
			}
			out[path.Join(WebhooksDir, strings.TrimSuffix(name, StaticSuffix)+".yaml")] = append([]byte(webhooksHeader), b...)
		case "admissionregistration.k8s.io/v1 ValidatingAdmissionPolicy":
			policies[name] = append([]*unstructured.Unstructured{o}, policies[name]...)
		case "admissionregistration.k8s.io/v1 ValidatingAdmissionPolicyBinding":
			bindings = append(bindings, o)
		default:
			return nil, fmt.Errorf("%s %s %s: the admission configuration files hold only admissionregistration.k8s.io/v1 ValidatingWebhookConfigurations, ValidatingAdmissionPolicies and their bindings", o.GetAPIVersion(), o.GetKind(), name)
		}
	}
	for _, b := range bindings {
		policy, _, _ := unstructured.NestedString(b.Object, "spec", "policyName")
		if _, ok := policies[policy]; !ok {
			return nil, fmt.Errorf("ValidatingAdmissionPolicyBinding %s binds policy %q, which is not among the files: kube-apiserver loads a binding only with its policy", b.GetName(), policy)
		}
		policies[policy] = append(policies[policy], b)
	}
	names := make([]string, 0, len(policies))
	for n := range policies {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		var docs []string
		for _, o := range policies[n] {
			b, err := toYAML(o)
			if err != nil {
				return nil, err
			}
			docs = append(docs, string(b))
		}
		out[path.Join(PoliciesDir, strings.TrimSuffix(n, StaticSuffix)+".yaml")] = []byte(policiesHeader + strings.Join(docs, "---\n"))
	}
	out[AdmissionConfigFile] = admissionConfiguration(dir, len(names) > 0)
	return out, nil
}

// The comments of config/ do not survive rendering: the files say where
// to read them.
const (
	webhooksHeader = `# Written by make render OVERLAY=manifest-admission from config/webhook/manifests.yaml,
# whose comments explain every entry; kube-apiserver loads it from its staticManifestsDir.
# The first conditions of hostprocess.pipeguard.io and claims.pipeguard.io are fixed
# here: docs/install.md ("Admission configuration from files") says when to set them to 'true'.
`
	policiesHeader = `# Written by make render OVERLAY=manifest-admission from config/agent/anchor-policy.yaml,
# whose comments explain the policy; kube-apiserver loads it from its staticManifestsDir.
`
)

// admissionConfiguration is the AdmissionConfiguration that points the
// ValidatingAdmissionWebhook plugin (and the ValidatingAdmissionPolicy
// plugin, when there are policies) at their directories under dir.
func admissionConfiguration(dir string, withPolicies bool) []byte {
	var b strings.Builder
	fmt.Fprintf(&b, `# kube-apiserver --admission-control-config-file=%[1]s
# Written by make render OVERLAY=manifest-admission. Merge these plugins
# into the AdmissionConfiguration the API server already has, if it has one:
# it reads only one file.
apiVersion: apiserver.config.k8s.io/v1
kind: AdmissionConfiguration
plugins:
- name: ValidatingAdmissionWebhook
  configuration:
    apiVersion: apiserver.config.k8s.io/v1
    kind: WebhookAdmissionConfiguration
    staticManifestsDir: %[2]s
`, path.Join(dir, AdmissionConfigFile), path.Join(dir, WebhooksDir))
	if withPolicies {
		fmt.Fprintf(&b, `- name: ValidatingAdmissionPolicy
  configuration:
    apiVersion: apiserver.config.k8s.io/v1
    kind: ValidatingAdmissionPolicyConfiguration
    staticManifestsDir: %s
`, path.Join(dir, PoliciesDir))
	}
	return []byte(b.String())
}

// callURL points every webhook of w at opts.URL, trusting opts.CABundle.
func callURL(w *unstructured.Unstructured, opts FileOptions) error {
	hooks, _, err := unstructured.NestedSlice(w.Object, "webhooks")
	if err != nil {
		return fmt.Errorf("ValidatingWebhookConfiguration %s: %w", w.GetName(), err)
	}
	ca := base64.StdEncoding.EncodeToString(opts.CABundle)
	for i, h := range hooks {
		m, ok := h.(map[string]any)
		if !ok {
			return fmt.Errorf("ValidatingWebhookConfiguration %s: webhook %d is not an object", w.GetName(), i)
		}
		m["clientConfig"] = map[string]any{"url": opts.URL, "caBundle": ca}
	}
	return unstructured.SetNestedSlice(w.Object, hooks, "webhooks")
}

// checkURL holds the URL to the rules kube-apiserver applies to a
// webhook's clientConfig.url, and says what is wrong in terms of the make
// variable.
func checkURL(raw string) error {
	if raw == "" {
		return fmt.Errorf("no webhook URL: a webhook loaded from a file cannot call a Service, so name the https URL kube-apiserver reaches pipeguard-webhook at, such as https://10.0.0.10:9443/validate")
	}
	u, err := url.Parse(raw)
	if err != nil {
		return fmt.Errorf("webhook URL %q: %w", raw, err)
	}
	if u.Scheme != "https" || u.Host == "" {
		return fmt.Errorf("webhook URL %q: kube-apiserver calls webhooks only over https; give https://<host>:<port>/validate", raw)
	}
	if u.User != nil || u.RawQuery != "" || u.Fragment != "" {
		return fmt.Errorf("webhook URL %q: kube-apiserver refuses a user, query or fragment in a webhook URL", raw)
	}
	if u.Path != "/validate" {
		return fmt.Errorf("webhook URL %q: pipeguard-webhook answers reviews at the path /validate", raw)
	}
	return nil
}

// checkCABundle refuses a CA bundle that holds no PEM certificate.
func checkCABundle(b []byte) error {
	if len(b) == 0 {
		return fmt.Errorf("no CA bundle: give the PEM of the CA that signed pipeguard-webhook's serving certificate; kube-apiserver trusts only it when it calls the webhook")
	}
	rest := b
	for {
		var blk *pem.Block
		blk, rest = pem.Decode(rest)
		if blk == nil {
			return fmt.Errorf("the CA bundle holds no PEM CERTIFICATE block: give the CA certificate (-----BEGIN CERTIFICATE-----), not a key or a DER file")
		}
		if blk.Type == "CERTIFICATE" {
			return nil
		}
	}
}

func toYAML(o *unstructured.Unstructured) ([]byte, error) {
	b, err := yaml.Marshal(o.Object)
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w", o.GetKind(), o.GetName(), err)
	}
	return b, nil
}
