package install_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// pathWithoutKubectl returns a PATH under which every command of this one
// is found but kubectl: a directory of links to the first of each name.
func pathWithoutKubectl(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	for _, d := range filepath.SplitList(os.Getenv("PATH")) {
		entries, err := os.ReadDir(d)
		if err != nil {
			continue
		}
		for _, e := range entries {
			name := e.Name()
			if name == "kubectl" || strings.HasPrefix(name, "kubectl-") {
				continue
			}
			link := filepath.Join(dir, name)
			if _, err := os.Lstat(link); err == nil {
				continue // an earlier directory's wins, as for the shell
			}
			if err := os.Symlink(filepath.Join(d, name), link); err != nil {
				t.Fatal(err)
			}
		}
	}
	return dir
}

// TestMakeRenderNeedsNoKubectl: make render builds the manifests itself,
// with no kubectl anywhere and none built; make deploy without one says
// what to do and applies nothing.
func TestMakeRenderNeedsNoKubectl(t *testing.T) {
	// The last PATH in the environment is the one the command sees.
	env := append(makeEnv(), "PATH="+pathWithoutKubectl(t))
	out, code := runCommand(t, env, "make", "--no-print-directory", "render", "IMG=registry.example.com/pipeguard:v1", "DEPLOY_DIR="+t.TempDir())
	if code != 0 {
		t.Fatalf("make render without kubectl exited %d:\n%s", code, out)
	}
	for _, want := range []string{"kind: ValidatingWebhookConfiguration", "image: registry.example.com/pipeguard:v1"} {
		if !strings.Contains(out, want) {
			t.Errorf("make render printed no %q:\n%s", want, out)
		}
	}
	for _, notWant := range []string{"control-plane", "no kubectl", "building"} {
		if strings.Contains(out, notWant) {
			t.Errorf("make render without kubectl mentions %q:\n%s", notWant, out)
		}
	}

	out, code = runCommand(t, env, "make", "--no-print-directory", "deploy", "IMG=registry.example.com/pipeguard:v1", "DEPLOY_DIR="+t.TempDir())
	const want = "make deploy: no kubectl on PATH, and make deploy applies with it: install kubectl (https://kubernetes.io/docs/tasks/tools/) or name one with KUBECTL=/path/to/kubectl. Nothing was applied.\n" +
		"To see what would be applied without kubectl: make render OVERLAY=default"
	if code == 0 || !strings.Contains(out, want) {
		t.Errorf("make deploy without kubectl exited %d:\n%s\nwant a failure saying:\n%s", code, out, want)
	}
	if strings.Contains(out, "control-plane") {
		t.Errorf("make deploy without kubectl builds one:\n%s", out)
	}
}
