package app

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestServeBeforeItStarts: the failures of the real run before the App
// is built: the API server's configuration first, then the pod's
// namespace the certificate needs.
func TestServeBeforeItStarts(t *testing.T) {
	kubeconfig := writeKubeconfig(t)
	missing := filepath.Join(t.TempDir(), "kubeconfig")
	for name, tc := range map[string]struct {
		args    []string
		env     string // KUBECONFIG
		code    int
		prefix  string
		suffix  string
		skipped string // why the row cannot run here, if it cannot
	}{
		"no configuration": {nil, "/nonexistent", 1,
			"pipeguard-webhook: no API server configuration: ", "; run in a cluster, set KUBECONFIG or pass --kubeconfig\n", ""},
		"a kubeconfig that is missing": {[]string{"--kubeconfig", missing}, "", 1,
			"pipeguard-webhook: --kubeconfig " + missing + ": stat " + missing + ": no such file or directory\n", "", ""},
		"a kubeconfig that is missing, with --cert-rotation outside a pod": {[]string{"--kubeconfig", missing, "--cert-rotation"}, "", 1,
			"pipeguard-webhook: --kubeconfig " + missing + ": ", "", ""},
		"--cert-rotation outside a pod": {[]string{"--kubeconfig", kubeconfig, "--cert-rotation"}, "", 2,
			"pipeguard-webhook: --namespace: not running in a pod (open " + serviceAccountNamespace + ": no such file or directory); pass the namespace of the certificate Secret and the webhook Service\n", "",
			inAPod()},
	} {
		t.Run(name, func(t *testing.T) {
			if tc.skipped != "" {
				t.Skip(tc.skipped)
			}
			t.Setenv("KUBECONFIG", tc.env)
			e := execute(t, serve, append(tc.args, "--zap-log-level", "error")...)
			if e.code != tc.code || !strings.HasPrefix(e.stderr, tc.prefix) || !strings.HasSuffix(e.stderr, tc.suffix) {
				t.Errorf("exit code %d, stderr %q; want %d and %q ... %q", e.code, e.stderr, tc.code, tc.prefix, tc.suffix)
			}
		})
	}
}

func inAPod() string {
	if _, err := os.Stat(serviceAccountNamespace); err == nil {
		return "running in a pod: " + serviceAccountNamespace + " is there"
	}
	return ""
}

// TestComplete: the options the command starts the App with take the API
// server from the kubeconfig and, without --namespace, the certificate's
// namespace from the pod's.
func TestComplete(t *testing.T) {
	kubeconfig := writeKubeconfig(t)
	namespaceFile := filepath.Join(t.TempDir(), "namespace")
	if err := os.WriteFile(namespaceFile, []byte("pipeguard-system\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for name, tc := range map[string]struct {
		args      []string
		namespace string // of the certificate; "" for no rotation
	}{
		"no rotation":              {nil, ""},
		"rotation in the pod's":    {[]string{"--cert-rotation"}, "pipeguard-system"},
		"rotation in --namespace":  {[]string{"--cert-rotation", "--namespace", "certs"}, "certs"},
		"--namespace, no rotation": {[]string{"--namespace", "certs"}, ""},
	} {
		t.Run(name, func(t *testing.T) {
			e := execute(t, served, append(tc.args, "--kubeconfig", kubeconfig)...)
			if e.opts == nil {
				t.Fatalf("the command did not run: exit code %d, %s", e.code, e.stderr)
			}
			opts, err := complete(e.opts, namespaceFile)
			if err != nil {
				t.Fatal(err)
			}
			if opts.Config == nil || opts.Config.Host != "https://127.0.0.1:6443" {
				t.Errorf("API server %+v, want the kubeconfig's https://127.0.0.1:6443", opts.Config)
			}
			got := ""
			if opts.CertRotation != nil {
				got = opts.CertRotation.Namespace
			}
			if got != tc.namespace {
				t.Errorf("certificate namespace %q, want %q", got, tc.namespace)
			}
			if e.opts.Rotation.Namespace == "pipeguard-system" {
				t.Error("complete changed the command's options")
			}
		})
	}
}

func writeKubeconfig(t *testing.T) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "kubeconfig")
	const kubeconfig = `apiVersion: v1
kind: Config
clusters: [{name: test, cluster: {server: "https://127.0.0.1:6443"}}]
users: [{name: test, user: {token: test}}]
contexts: [{name: test, context: {cluster: test, user: test}}]
current-context: test
`
	if err := os.WriteFile(path, []byte(kubeconfig), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}
