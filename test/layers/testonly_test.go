package layers

import (
	"fmt"
	"slices"
	"sort"
	"strings"
	"testing"
)

// notProduct are the folders whose packages are no part of the product: the
// tools (hack), the tests (test) and the helpers of both (internal/testing).
// Everything else is a product folder.
var notProduct = []string{"hack", "test", "internal/testing"}

// productRoots are the folders whose packages the product is made from: its
// binaries (the mains under cmd) and its API (the types under api, which
// other programs import). Every other package of a product folder must be
// one of theirs, imported outside tests.
var productRoots = []string{"cmd", "api"}

// testStdlib are the standard packages that exist for tests.
var testStdlib = []string{"testing", "net/http/httptest"}

func isProduct(path string) bool {
	return !slices.ContainsFunc(notProduct, func(p string) bool { return under(path, p) })
}

// testHelperImports returns each import, outside its tests, of a product
// package of pkgs (the packages of one GOOS) that serves tests or tools: a
// package of hack, test or internal/testing, or one of the standard test
// packages.
func testHelperImports(pkgs []pkg) []string {
	var wrong []string
	for _, p := range pkgs {
		if !isProduct(p.path) {
			continue
		}
		for _, imp := range p.own {
			switch {
			case strings.HasPrefix(imp, module+"/") && !isProduct(imp):
				wrong = append(wrong, fmt.Sprintf("%s imports %s, which serves tests or tools: move the code that needs it into a _test.go file, or what the product needs of it into a product package", p.path, imp))
			case slices.ContainsFunc(testStdlib, func(s string) bool { return imp == s || strings.HasPrefix(imp, s+"/") }):
				wrong = append(wrong, fmt.Sprintf("%s imports %s: only tests and test helpers (internal/testing/...) may", p.path, imp))
			}
		}
	}
	sort.Strings(wrong)
	return slices.Compact(wrong)
}

// TestProductImportsNoTestHelper: no package of a product folder imports,
// outside its tests, a test helper (internal/testing/...), a test, a tool
// or the standard test packages. Tests may import them all.
func TestProductImportsNoTestHelper(t *testing.T) {
	for _, goos := range gooses {
		t.Run(goos, func(t *testing.T) {
			for _, w := range testHelperImports(list(t, goos)) {
				t.Error(w)
			}
		})
	}
}

// testOnlyPackages returns each package under a product folder that serves
// tests alone, with what to do about it, from the packages of every GOOS
// (lists, one per GOOS). A package serves tests alone when no product root
// reaches it through imports outside tests in any GOOS: when only tests,
// tools and test helpers import it, or only packages that serve tests alone
// themselves. A main outside cmd is no product binary, and a package of
// _test.go files only is tests of something else. A package of a doc.go
// alone documents the packages under it and is left alone.
func testOnlyPackages(lists [][]pkg) []string {
	type info struct {
		listed    bool
		name      string
		goFiles   map[string]bool
		own       map[string]bool
		importers map[string]bool // outside tests
	}
	all := map[string]*info{}
	get := func(path string) *info {
		if all[path] == nil {
			all[path] = &info{goFiles: map[string]bool{}, own: map[string]bool{}, importers: map[string]bool{}}
		}
		return all[path]
	}
	for _, pkgs := range lists {
		for _, p := range pkgs {
			in := get(p.path)
			in.listed = true
			if p.name != "" {
				in.name = p.name
			}
			for _, f := range p.goFiles {
				in.goFiles[f] = true
			}
			for _, imp := range p.own {
				if strings.HasPrefix(imp, module+"/") {
					in.own[imp] = true
					get(imp).importers[p.path] = true
				}
			}
		}
	}
	reached := map[string]bool{}
	var walk func(string)
	walk = func(path string) {
		if reached[path] {
			return
		}
		reached[path] = true
		for imp := range all[path].own {
			walk(imp)
		}
	}
	for path, in := range all {
		if under(path, "api") || under(path, "cmd") && in.name == "main" {
			walk(path)
		}
	}
	var found []string
	for path, in := range all {
		if reached[path] || !isProduct(path) || !in.listed {
			continue
		}
		var importers []string
		for imp := range in.importers {
			importers = append(importers, strings.TrimPrefix(imp, module+"/"))
		}
		sort.Strings(importers)
		rel := strings.TrimPrefix(path, module+"/")
		switch {
		case len(in.goFiles) == 0:
			found = append(found, fmt.Sprintf("%s holds only _test.go files: move the tests under test/, beside the other tests of more than one package", rel))
		case len(in.goFiles) == 1 && in.goFiles["doc.go"] && len(in.own) == 0:
			// The documentation of the packages under it.
		case in.name == "main":
			found = append(found, fmt.Sprintf("%s is a main outside cmd/, so no pipeguard binary: move a program that tests run under internal/testing/..., a tool under hack/", rel))
		case len(importers) == 0:
			found = append(found, fmt.Sprintf("%s is imported by no package outside tests: move it under internal/testing/..., or into the _test.go files that use it", rel))
		default:
			found = append(found, fmt.Sprintf("%s is imported outside tests only by %s, which serve tests or tools: move it under internal/testing/... (a test helper) or hack/ (a tool's helper), or into the _test.go files that use it", rel, strings.Join(importers, ", ")))
		}
	}
	sort.Strings(found)
	return found
}

// TestNoTestOnlyPackageInTheProduct: every package under the product's
// folders is part of a binary or of the API; what serves tests alone lives
// in internal/testing/..., test/ or _test.go files. Rerun the evidence
// with the Go tool alone: the packages under the product's folders that
//
//	go list -deps ./cmd/... ./api/...
//
// does not list, for GOOS=linux and GOOS=windows, are the ones reported
// here (but for a package of a doc.go alone).
func TestNoTestOnlyPackageInTheProduct(t *testing.T) {
	var lists [][]pkg
	for _, goos := range gooses {
		lists = append(lists, list(t, goos))
	}
	for _, p := range testOnlyPackages(lists) {
		t.Error(p)
	}
}

// TestTestScaffoldingChecksFindViolations: the two checks above name the
// package and the remedy for each way test scaffolding can sit in the
// product, and leave alone what is the product's.
func TestTestScaffoldingChecksFindViolations(t *testing.T) {
	m := func(path string) string { return module + "/" + path }
	lib := func(path string, own ...string) pkg {
		for i := range own {
			if !strings.Contains(own[i], ".") && !slices.Contains(testStdlib, own[i]) {
				own[i] = m(own[i])
			}
		}
		return pkg{path: m(path), name: path[strings.LastIndex(path, "/")+1:], goFiles: []string{"x.go"}, own: own}
	}
	main := func(path string, own ...string) pkg {
		p := lib(path, own...)
		p.name = "main"
		return p
	}
	withTests := func(p pkg, imports ...string) pkg {
		for _, imp := range imports {
			p.imports = append(p.imports, m(imp))
		}
		return p
	}
	product := []pkg{
		main("cmd/pipeguard-webhook", "cmd/pipeguard-webhook/app"),
		lib("cmd/pipeguard-webhook/app", "webhook", "api/v1alpha1"),
		withTests(lib("webhook", "internal/kinds", "k8s.io/api/core/v1"), "internal/testing/samplepods"),
		lib("internal/kinds"),
		lib("api/v1alpha1"),
		{path: m("agent"), name: "agent", goFiles: []string{"doc.go"}},
	}
	t.Run("imports", func(t *testing.T) {
		tests := map[string]struct {
			pkgs []pkg
			want []string
		}{
			"the product alone, its tests using a helper": {pkgs: product},
			"tools and helpers importing helpers, tests and the product": {pkgs: []pkg{
				lib("hack/demo", "internal/testing/fakecri", "webhook"), lib("internal/testing/wmitest", "agent/hostops/wmi", "testing"),
				lib("test/wine/cmd/csiproxy", "internal/testing/win32test"),
			}},
			"a product package importing a test helper": {
				pkgs: []pkg{lib("agent/hostops/disk", "internal/testing/wmitest")},
				want: []string{m("agent/hostops/disk") + " imports " + m("internal/testing/wmitest") + ", which serves tests or tools: move the code that needs it into a _test.go file, or what the product needs of it into a product package"},
			},
			"a binary importing a test's package": {
				pkgs: []pkg{main("cmd/pipeguard-agent", "test/wine")},
				want: []string{m("cmd/pipeguard-agent") + " imports " + m("test/wine") + ", which serves tests or tools: move the code that needs it into a _test.go file, or what the product needs of it into a product package"},
			},
			"a product package importing a tool": {
				pkgs: []pkg{lib("controller", "hack/render")},
				want: []string{m("controller") + " imports " + m("hack/render") + ", which serves tests or tools: move the code that needs it into a _test.go file, or what the product needs of it into a product package"},
			},
			"a product package importing testing": {
				pkgs: []pkg{lib("agent/audit", "testing"), lib("webhook", "net/http/httptest")},
				want: []string{
					m("agent/audit") + " imports testing: only tests and test helpers (internal/testing/...) may",
					m("webhook") + " imports net/http/httptest: only tests and test helpers (internal/testing/...) may",
				},
			},
		}
		for name, tc := range tests {
			t.Run(name, func(t *testing.T) {
				if got := testHelperImports(tc.pkgs); !slices.Equal(got, tc.want) {
					t.Errorf("got:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(tc.want, "\n"))
				}
			})
		}
	})
	t.Run("test-only packages", func(t *testing.T) {
		tests := map[string]struct {
			lists [][]pkg
			want  []string
		}{
			"the product alone, with a doc.go package and the API": {lists: [][]pkg{product}},
			"tools, tests and helpers that nothing imports": {lists: [][]pkg{append(slices.Clone(product),
				main("hack/demo", "internal/testing/fakecri"), lib("internal/testing/fakecri"), lib("test/install"))}},
			"a package used by one GOOS only": {lists: [][]pkg{
				append(slices.Clone(product), lib("agent/hostops/win32")),
				append(slices.Clone(product[1:]), main("cmd/pipeguard-webhook", "cmd/pipeguard-webhook/app", "agent/hostops/win32"), lib("agent/hostops/win32")),
			}},
			"a package of tests alone": {
				lists: [][]pkg{append(slices.Clone(product), pkg{path: m("webhook/prefilter")})},
				want:  []string{"webhook/prefilter holds only _test.go files: move the tests under test/, beside the other tests of more than one package"},
			},
			"a fake that tests alone import": {
				lists: [][]pkg{append(slices.Clone(product[1:]), main("cmd/pipeguard-webhook", "cmd/pipeguard-webhook/app", "agent/hostops/disk"),
					withTests(lib("agent/hostops/disk", "agent/hostops/wmi"), "agent/hostops/wmi/wmitest"),
					lib("agent/hostops/wmi"), lib("agent/hostops/wmi/wmitest", "agent/hostops/wmi"))},
				want: []string{"agent/hostops/wmi/wmitest is imported by no package outside tests: move it under internal/testing/..., or into the _test.go files that use it"},
			},
			"a helper of tools and tests": {
				lists: [][]pkg{append(slices.Clone(product), lib("internal/testenv"), lib("hack/bench/loadtest", "internal/testenv"), lib("test/helm", "internal/testenv"))},
				want:  []string{"internal/testenv is imported outside tests only by hack/bench/loadtest, test/helm, which serve tests or tools: move it under internal/testing/... (a test helper) or hack/ (a tool's helper), or into the _test.go files that use it"},
			},
			"a main outside cmd and what only it imports": {
				lists: [][]pkg{append(slices.Clone(product), main("internal/fakecri/cmd/fakecri", "internal/fakecri"), lib("internal/fakecri"))},
				want: []string{
					"internal/fakecri is imported outside tests only by internal/fakecri/cmd/fakecri, which serve tests or tools: move it under internal/testing/... (a test helper) or hack/ (a tool's helper), or into the _test.go files that use it",
					"internal/fakecri/cmd/fakecri is a main outside cmd/, so no pipeguard binary: move a program that tests run under internal/testing/..., a tool under hack/",
				},
			},
		}
		for name, tc := range tests {
			t.Run(name, func(t *testing.T) {
				if got := testOnlyPackages(tc.lists); !slices.Equal(got, tc.want) {
					t.Errorf("got:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(tc.want, "\n"))
				}
			})
		}
	})
}
