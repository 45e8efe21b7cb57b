// Package regotest runs rego unit tests the way `opa test` does, on
// pipeguard's shipped rules and on admin-written ones, with the builtins
// pipeguard allows. It backs `pipeguard policy test` and the shipped
// rules' own go test.
package regotest

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/open-policy-agent/opa/v1/ast"
	"github.com/open-policy-agent/opa/v1/tester"

	shipped "github.com/pipeguard/pipeguard/rego"
)

// Shipped returns pipeguard's rego rules together with their tests.
func Shipped() []shipped.File {
	files, _ := read(shipped.FS(), ".", "")
	return files
}

// WithShippedRules returns the shipped admission and agent rules (not their
// tests) followed by files, so that admin tests can exercise whole
// decisions.
func WithShippedRules(files []shipped.File) []shipped.File {
	out := append(shipped.Admission(), shipped.Agent()...)
	return append(out, files...)
}

// Load reads every .rego file under the given files and directories.
func Load(paths ...string) ([]shipped.File, error) {
	var out []shipped.File
	for _, p := range paths {
		info, err := os.Stat(p)
		if err != nil {
			return nil, fmt.Errorf("cannot read rego from %s: %w", p, err)
		}
		if !info.IsDir() {
			b, err := os.ReadFile(p)
			if err != nil {
				return nil, fmt.Errorf("cannot read rego from %s: %w", p, err)
			}
			out = append(out, shipped.File{Name: p, Source: string(b)})
			continue
		}
		files, err := read(os.DirFS(p), ".", p)
		if err != nil {
			return nil, err
		}
		if len(files) == 0 {
			return nil, fmt.Errorf("no .rego files under %s", p)
		}
		out = append(out, files...)
	}
	return out, nil
}

func read(fsys fs.FS, root, prefix string) ([]shipped.File, error) {
	var out []shipped.File
	err := fs.WalkDir(fsys, root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() || !strings.HasSuffix(path, ".rego") {
			return nil
		}
		b, err := fs.ReadFile(fsys, path)
		if err != nil {
			return err
		}
		out = append(out, shipped.File{Name: filepath.Join(prefix, path), Source: string(b)})
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("cannot read rego files under %s: %w", prefix, err)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

// Run parses and compiles the files and runs every test rule (test_*) in
// them. A parse or compile error is returned as ast.Errors with file:row.
func Run(ctx context.Context, files []shipped.File) ([]*tester.Result, error) {
	modules := make(map[string]*ast.Module, len(files))
	var errs ast.Errors
	for _, f := range files {
		m, err := ast.ParseModuleWithOpts(f.Name, f.Source, ast.ParserOptions{RegoVersion: ast.RegoV1})
		if err != nil {
			if astErrs, ok := err.(ast.Errors); ok {
				errs = append(errs, astErrs...)
				continue
			}
			return nil, err
		}
		modules[f.Name] = m
	}
	if len(errs) > 0 {
		return nil, errs
	}
	compiler := ast.NewCompiler().
		WithCapabilities(shipped.Capabilities()).
		WithEnablePrintStatements(true)
	ch, err := tester.NewRunner().
		SetCompiler(compiler).
		SetDefaultRegoVersion(ast.RegoV1).
		SetTimeout(30*time.Second).
		CapturePrintOutput(true).
		RaiseBuiltinErrors(true).
		Run(ctx, modules)
	if err != nil {
		return nil, err
	}
	var results []*tester.Result
	for r := range ch {
		results = append(results, r)
	}
	return results, nil
}
