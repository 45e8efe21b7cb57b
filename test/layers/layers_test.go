// Package layers checks the import structure of pipeguard: every package
// belongs to a layer and imports only its own layer and the layers below
// it, and the node agent and the admission engine stay free of
// controller-runtime.
package layers

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
)

const module = "github.com/pipeguard/pipeguard"

// layers from the top down: a package may import packages of its own layer
// or of a layer further down the list. A layer is named by paths below the
// module; a path names that package and every package under it, and a
// package belongs to the first layer that names it.
//
// The test helpers stand above the product they fake and drive, and any
// package's tests may import them: see testHelpers.
var layers = []struct {
	name  string
	paths []string
}{
	{"binaries and tools", []string{"cmd", "hack", "test"}},
	{testHelpers, []string{"internal/testing"}},
	{"webhook and controller", []string{"webhook", "controller"}},
	{"admission engine", []string{"policy"}},
	{"node agent", []string{"agent"}},
	{"foundations", []string{"api", "pipepath", "rego"}},
	{"internal helpers", []string{"internal"}},
}

// testHelpers is the layer of the packages that exist for tests: the tests
// of every layer may import them, the product never does
// (TestProductImportsNoTestHelper).
const testHelpers = "test helpers"

// noControllerRuntime are the paths whose packages must not depend on
// controller-runtime, directly or not.
var noControllerRuntime = []string{"agent", "policy", "pipepath", "rego"}

// under reports whether pkg is the package path below the module or one
// under it.
func under(pkg, path string) bool {
	rel := strings.TrimPrefix(pkg, module+"/")
	return rel == path || strings.HasPrefix(rel, path+"/")
}

// layerOf returns the index in layers of pkg, or -1 when no layer holds it.
func layerOf(pkg string) int {
	for i, l := range layers {
		for _, p := range l.paths {
			if under(pkg, p) {
				return i
			}
		}
	}
	return -1
}

type pkg struct {
	path    string
	name    string   // the package clause of its non-test files; empty when it has none
	goFiles []string // its non-test Go files for the GOOS
	imports []string // of the package and of its tests
	own     []string // of the package alone, not of its tests
	deps    []string // everything the package (not its tests) depends on
	dir     string   // the package's directory
}

var listed = map[string][]pkg{}

// list returns every package of the module for goos that git tracks, from
// one go list run per GOOS shared by the tests. Packages in folders git
// does not track (an ignored tmp/, a scratch copy) are not pipeguard's and
// are left out: see tracked.
func list(t *testing.T, goos string) []pkg {
	t.Helper()
	if pkgs, ok := listed[goos]; ok {
		return pkgs
	}
	cmd := exec.Command("go", "list", "-f",
		`{{.ImportPath}}|{{join .Imports " "}} {{join .TestImports " "}} {{join .XTestImports " "}}|{{join .Deps " "}}|{{.Dir}}|{{join .Imports " "}}|{{if .GoFiles}}{{.Name}}{{end}}|{{join .GoFiles " "}}`, "./...")
	cmd.Dir = "../.."
	cmd.Env = append(os.Environ(), "GOOS="+goos)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("GOOS=%s go list: %v\n%s", goos, err, stderr.String())
	}
	var pkgs []pkg
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		f := strings.Split(line, "|")
		if len(f) != 7 {
			t.Fatalf("GOOS=%s go list: unexpected line %q", goos, line)
		}
		pkgs = append(pkgs, pkg{path: f[0], imports: strings.Fields(f[1]), deps: strings.Fields(f[2]), dir: f[3], own: strings.Fields(f[4]),
			name: f[5], goFiles: strings.Fields(f[6])})
	}
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	files, err := exec.Command("git", "-C", root, "ls-files", "--cached", "-z", "--", "*.go").Output()
	if err != nil {
		t.Logf("git ls-files: %v: checking every package go list finds, tracked or not", err)
		listed[goos] = pkgs
		return pkgs
	}
	pkgs = tracked(pkgs, root, strings.Split(strings.TrimRight(string(files), "\x00"), "\x00"))
	listed[goos] = pkgs
	return pkgs
}

// tracked keeps the packages whose directory holds a Go file of files,
// paths relative to root as git ls-files prints them.
func tracked(pkgs []pkg, root string, files []string) []pkg {
	dirs := map[string]bool{}
	for _, f := range files {
		dirs[filepath.Join(root, filepath.Dir(filepath.FromSlash(f)))] = true
	}
	var out []pkg
	for _, p := range pkgs {
		if dirs[filepath.Clean(p.dir)] {
			out = append(out, p)
		}
	}
	return out
}

// TestUntrackedPackagesAreNotChecked: a package in a folder git does not
// track is left out, one git tracks is kept, wherever it is.
func TestUntrackedPackagesAreNotChecked(t *testing.T) {
	root := filepath.FromSlash("/src/pipeguard")
	pkgs := []pkg{
		{path: module + "/webhook", dir: filepath.Join(root, "webhook")},
		{path: module + "/tmp/scratch", dir: filepath.Join(root, "tmp", "scratch")},
		{path: module + "/hack/demo", dir: filepath.Join(root, "hack", "demo")},
	}
	got := tracked(pkgs, root, []string{"webhook/handler.go", "hack/demo/main.go", "tmp.go"})
	var paths []string
	for _, p := range got {
		paths = append(paths, strings.TrimPrefix(p.path, module+"/"))
	}
	if strings.Join(paths, " ") != "webhook hack/demo" {
		t.Errorf("tracked packages: %q, want webhook and hack/demo", paths)
	}
}

var gooses = []string{"linux", "windows"}

func TestImportsPointDown(t *testing.T) {
	for _, goos := range gooses {
		t.Run(goos, func(t *testing.T) {
			var wrong, homeless []string
			used := map[string]bool{}
			for _, p := range list(t, goos) {
				from := layerOf(p.path)
				if from < 0 {
					homeless = append(homeless, p.path)
					continue
				}
				for _, imp := range p.imports {
					if !strings.HasPrefix(imp, module+"/") {
						continue
					}
					to := layerOf(imp)
					if to >= 0 && layers[to].name == testHelpers && !slices.Contains(p.own, imp) {
						continue // a test's import of a test helper
					}
					if to >= 0 && to < from {
						wrong = append(wrong, p.path+" ("+layers[from].name+") imports "+imp+" ("+layers[to].name+")")
					}
				}
				for _, l := range layers {
					for _, path := range l.paths {
						used[path] = used[path] || under(p.path, path)
					}
				}
			}
			if len(homeless) > 0 {
				t.Errorf("packages that belong to no layer (add them to the layers of test/layers):\n%s", strings.Join(homeless, "\n"))
			}
			sort.Strings(wrong)
			if len(wrong) > 0 {
				t.Errorf("imports that point up:\n%s", strings.Join(wrong, "\n"))
			}
			for _, l := range layers {
				for _, path := range l.paths {
					if !used[path] {
						t.Errorf("layer %q names %s, which holds no package: remove it from test/layers", l.name, path)
					}
				}
			}
		})
	}
}

// hostOpsMayImport are the packages of the module that the host operations
// (agent/hostops and below) may import outside their tests: their own,
// confinement, and the internal helpers. Request validation, API errors and
// peer identity belong to the groups and the server above them.
var hostOpsMayImport = []string{"agent/hostops", "agent/confine", "internal"}

func TestHostOpsImportOnlyHostOps(t *testing.T) {
	for _, goos := range gooses {
		t.Run(goos, func(t *testing.T) {
			var wrong []string
			seen := false
			for _, p := range list(t, goos) {
				if !under(p.path, "agent/hostops") {
					continue
				}
				seen = true
				for _, imp := range p.own {
					if !strings.HasPrefix(imp, module+"/") {
						continue
					}
					if !slices.ContainsFunc(hostOpsMayImport, func(path string) bool { return under(imp, path) }) {
						wrong = append(wrong, p.path+" imports "+imp)
					}
				}
			}
			if !seen {
				t.Fatal("no package under agent/hostops: update test/layers")
			}
			sort.Strings(wrong)
			if len(wrong) > 0 {
				t.Errorf("host operations that import packages above them (allowed: %s):\n%s",
					strings.Join(hostOpsMayImport, ", "), strings.Join(wrong, "\n"))
			}
		})
	}
}

// windowsCallers are the packages of the host operations that call Windows
// (golang.org/x/sys/windows) outside their tests: win32, the seam of the
// native operations, and wmi, the seam of the WMI method calls (COM). The
// groups call Windows only through these two.
var windowsCallers = []string{"agent/hostops/win32", "agent/hostops/wmi"}

func TestHostOpsCallWindowsOnlyThroughWin32(t *testing.T) {
	var wrong []string
	for _, p := range list(t, "windows") {
		if !under(p.path, "agent/hostops") || slices.ContainsFunc(windowsCallers, func(path string) bool { return under(p.path, path) }) {
			continue
		}
		for _, imp := range p.own {
			if imp == "golang.org/x/sys/windows" || strings.HasPrefix(imp, "golang.org/x/sys/windows/") {
				wrong = append(wrong, p.path+" imports "+imp)
			}
		}
	}
	sort.Strings(wrong)
	if len(wrong) > 0 {
		t.Errorf("host operations that call Windows outside win32 (allowed: %s):\n%s",
			strings.Join(windowsCallers, ", "), strings.Join(wrong, "\n"))
	}
}

func TestNoControllerRuntimeBelowTheWebhook(t *testing.T) {
	for _, goos := range gooses {
		for _, p := range list(t, goos) {
			for _, path := range noControllerRuntime {
				if !under(p.path, path) {
					continue
				}
				for _, dep := range p.deps {
					if strings.HasPrefix(dep, "sigs.k8s.io/controller-runtime") {
						t.Errorf("GOOS=%s %s depends on %s", goos, p.path, dep)
						break
					}
				}
			}
		}
	}
}
