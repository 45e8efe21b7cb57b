// Package layers checks the import structure of pipeguard: each layer
// imports only the layers below it, and the node agent and the admission
// engine stay free of controller-runtime.
package layers

import (
	"os/exec"
	"sort"
	"strings"
	"testing"
)

const module = "github.com/pipeguard/pipeguard"

// layers from the top down: a package may import packages of its own layer
// or of a layer further down the list. A layer is named by path prefixes
// below the module.
var layers = []struct {
	name     string
	prefixes []string
}{
	{"binaries and tools", []string{"cmd/", "hack/", "test/"}},
	{"webhook and controller", []string{"webhook", "controller"}},
	{"admission engine", []string{"policy"}},
	{"node agent", []string{"agent"}},
	{"foundations", []string{"api/", "pipepath", "rego"}},
	{"internal helpers", []string{"internal/"}},
}

func layerOf(t *testing.T, pkg string) int {
	rel := strings.TrimPrefix(strings.TrimPrefix(pkg, module), "/")
	for i, l := range layers {
		for _, p := range l.prefixes {
			if rel == strings.TrimSuffix(p, "/") || strings.HasPrefix(rel, strings.TrimSuffix(p, "/")+"/") {
				return i
			}
		}
	}
	t.Fatalf("package %s belongs to no layer: add it to the layers of test/layers", pkg)
	return 0
}

// goList runs go list over the module with a template.
func goList(t *testing.T, args ...string) []string {
	t.Helper()
	cmd := exec.Command("go", append([]string{"list"}, args...)...)
	cmd.Dir = "../.."
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list %s: %v\n%s", strings.Join(args, " "), err, stderr.String())
	}
	return strings.Split(strings.TrimSpace(string(out)), "\n")
}

func TestImportsPointDown(t *testing.T) {
	for _, goos := range []string{"linux", "windows"} {
		t.Run(goos, func(t *testing.T) {
			t.Setenv("GOOS", goos)
			var wrong []string
			for _, line := range goList(t, "-f", "{{.ImportPath}}{{range .Imports}} {{.}}{{end}}{{range .TestImports}} {{.}}{{end}}", "./...") {
				fields := strings.Fields(line)
				from := layerOf(t, fields[0])
				for _, imp := range fields[1:] {
					if !strings.HasPrefix(imp, module+"/") {
						continue
					}
					if to := layerOf(t, imp); to < from {
						wrong = append(wrong, fields[0]+" ("+layers[from].name+") imports "+imp+" ("+layers[to].name+")")
					}
				}
			}
			sort.Strings(wrong)
			if len(wrong) > 0 {
				t.Errorf("imports that point up:\n%s", strings.Join(wrong, "\n"))
			}
		})
	}
}

func TestNoControllerRuntimeBelowTheWebhook(t *testing.T) {
	for _, pkg := range []string{"./agent/...", "./policy/...", "./pipepath/...", "./rego/..."} {
		for _, goos := range []string{"linux", "windows"} {
			t.Setenv("GOOS", goos)
			for _, dep := range goList(t, "-deps", pkg) {
				if strings.HasPrefix(dep, "sigs.k8s.io/controller-runtime") {
					t.Errorf("GOOS=%s %s depends on %s", goos, pkg, dep)
					break
				}
			}
		}
	}
}
