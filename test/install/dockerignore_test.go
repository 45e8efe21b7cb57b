package install_test

import (
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"strings"
	"testing"
)

// dockerignored reports whether rel, a slash-separated path in the build
// context, is left out by patterns, as docker build reads .dockerignore:
// each pattern cleaned, matched with path.Match against the path and every
// directory above it, a later "!" pattern taking a path back.
func dockerignored(patterns []string, rel string) bool {
	out := false
	for _, p := range patterns {
		keep := strings.HasPrefix(p, "!")
		p = path.Clean(strings.TrimPrefix(strings.TrimPrefix(p, "!"), "/"))
		for dir := rel; dir != "." && dir != "/"; dir = path.Dir(dir) {
			if ok, _ := path.Match(p, dir); ok {
				out = !keep
				break
			}
		}
	}
	return out
}

func readDockerignore(t *testing.T) []string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(repoRoot, ".dockerignore"))
	if err != nil {
		t.Fatal(err)
	}
	var patterns []string
	for _, line := range strings.Split(string(data), "\n") {
		if line = strings.TrimSpace(line); line != "" && !strings.HasPrefix(line, "#") {
			patterns = append(patterns, line)
		}
	}
	return patterns
}

// TestDockerContextLeavesOutBuildOutputs: docker build sends no build
// output (bin/ holds the local control plane, hundreds of MB), and every
// file git tracks, which is all the images build from, is still sent.
func TestDockerContextLeavesOutBuildOutputs(t *testing.T) {
	patterns := readDockerignore(t)
	for _, p := range []string{"bin/k8s/1.37.1-linux-amd64/kube-apiserver", "bin/pipeguard-webhook", "tmp/scratch/x.go", "webhook.test", "demo"} {
		if !dockerignored(patterns, p) {
			t.Errorf("%s is sent to docker build; .dockerignore should leave it out", p)
		}
	}
	out, err := exec.Command("git", "-C", repoRoot, "ls-files").Output()
	if err != nil {
		t.Skipf("git ls-files: %v", err)
	}
	files := strings.Fields(string(out))
	if len(files) < 100 {
		t.Fatalf("git ls-files lists %d files", len(files))
	}
	for _, f := range files {
		if dockerignored(patterns, f) {
			t.Errorf("%s is tracked but .dockerignore leaves it out of the image build", f)
		}
	}
}

// TestDockerignoreMatcher: the reading of .dockerignore the test above
// relies on.
func TestDockerignoreMatcher(t *testing.T) {
	patterns := []string{"bin/", "*.test", "/demo", "docs/*.md", "!docs/keep.md"}
	for rel, want := range map[string]bool{
		"bin/x": true, "bin": true, "binary/x": false, "a.test": true, "cmd/a.test": false,
		"demo": true, "hack/demo/main.go": false, "docs/a.md": true, "docs/keep.md": false,
	} {
		if got := dockerignored(patterns, rel); got != want {
			t.Errorf("%s: ignored = %v, want %v", rel, got, want)
		}
	}
}
