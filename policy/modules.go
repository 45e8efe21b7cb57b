package policy

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/open-policy-agent/opa/v1/ast"
	"github.com/open-policy-agent/opa/v1/rego"

	"github.com/pipeguard/pipeguard/api/v1alpha1"
	shipped "github.com/pipeguard/pipeguard/rego"
)

// Admin-written rego lives in packages below pipeguard.admission, one
// package per policy. A generated module joins those packages' violation
// sets to the shipped rules', each violation completed with its policy's
// name and enforcement action.

// adminPackageRoot is the package every admin-written module must live
// below. The shipped rules own pipeguard.admission itself.
var adminPackageRoot = ast.MustParseRef("data.pipeguard.admission")

// decisionQuery reads every violation in one evaluation; each goes to the
// set its action names, deny, warn or dryrun, as the rules of those sets
// put it.
const decisionQuery = "violation := data.pipeguard.admission.violation"

// adminQuery reads the violations of admin-written modules alone, each
// with its policy's name and enforcement action. Compile prepares it to
// compile every admin module together; evaluation asks each policy's
// violations in a query of their own (policyQueries).
const adminQuery = "admin := data.pipeguard.admission.admin_violation"

// glueFile is the name of the generated module that gathers admin
// violations, with their policy's enforcement action, into admin_violation
// and hands them on to the shipped rules' violation set.
const glueFile = "pipeguard-generated.rego"

// parseModules parses a policy's rego modules and checks that each keeps to
// a package of its own below pipeguard.admission.
func parseModules(p *v1alpha1.PipeAccessPolicy) ([]*ast.Module, error) {
	var modules []*ast.Module
	for i, m := range p.Spec.Rego {
		if m.Name == "" {
			return nil, fmt.Errorf("spec.rego[%d].name is empty; name the module, e.g. \"rules.rego\"", i)
		}
		file := p.Name + "/" + m.Name
		mod, err := ast.ParseModuleWithOpts(file, m.Source, ast.ParserOptions{RegoVersion: ast.RegoV1})
		if err != nil {
			return nil, err
		}
		if err := shipped.CheckAdminPackage(file, mod, adminPackageRoot, regoIdent(p.Name)); err != nil {
			return nil, err
		}
		path := mod.Package.Path
		if name, _ := path[len(adminPackageRoot)].Value.(ast.String); reservedRules()[string(name)] {
			example := regoIdent(p.Name)
			if reservedRules()[example] {
				example += "_rules"
			}
			return nil, fmt.Errorf("%s:%d: package %s is not allowed: %s is a rule of package pipeguard.admission; choose another name, e.g. \"package pipeguard.admission.%s\"",
				file, mod.Package.Location.Row, strings.TrimPrefix(path.String(), "data."), string(name), example)
		}
		modules = append(modules, mod)
	}
	return modules, nil
}

// shippedQuery is the decision query over the shipped rules alone. It is
// the same for every generation, and prepared queries are safe for
// concurrent use, so it is prepared once.
//
// It is a lazily built immutable value, not mutable state: its only input
// is the rego embedded at build time, so every engine of the process
// would prepare the same query (or meet the same error); nothing sets or
// replaces it, and tests cannot vary it.
var shippedQuery = sync.OnceValues(func() (rego.PreparedEvalQuery, error) {
	return prepare(context.Background(), decisionQuery, nil)
})

// reservedRules are the names of the rules of package pipeguard.admission,
// shipped and generated. A package below it by one of these names would
// clash with the rule.
var reservedRules = sync.OnceValue(func() map[string]bool {
	names := map[string]bool{"admin_violation": true}
	for _, f := range shipped.Admission() {
		m, err := ast.ParseModuleWithOpts(f.Name, f.Source, ast.ParserOptions{RegoVersion: ast.RegoV1})
		if err != nil || !m.Package.Path.Equal(adminPackageRoot) {
			continue
		}
		for _, r := range m.Rules {
			if v, ok := r.Head.Ref()[0].Value.(ast.Var); ok {
				names[string(v)] = true
			}
		}
	}
	return names
})

// adminPackage is a package of admin-written rego and the policy it
// belongs to.
type adminPackage struct {
	path   string // data.pipeguard.admission.…
	policy string
	action string
}

// packages lists the packages of the policy's modules, each once.
func (p *compiledPolicy) packages(modules []*ast.Module) []adminPackage {
	var out []adminPackage
	seen := map[string]bool{}
	for _, m := range modules {
		pkg := m.Package.Path.String()
		if !seen[pkg] {
			seen[pkg] = true
			out = append(out, adminPackage{path: pkg, policy: p.facts.Name, action: p.facts.EnforcementAction})
		}
	}
	return out
}

// glueModule generates the module that gathers the violation sets of the
// admin packages into admin_violation, each violation completed by
// custom_violation with its policy's name and enforcement action, and adds
// them to the shipped rules' violation set, so that deny, warn and dryrun
// hold every violation of the generation.
func glueModule(packages []adminPackage) (*ast.Module, error) {
	var glue strings.Builder
	glue.WriteString("package pipeguard.admission\n\nviolation contains v if some v in admin_violation\n\n")
	for _, p := range packages {
		name, _ := json.Marshal(p.policy)
		action, _ := json.Marshal(p.action)
		fmt.Fprintf(&glue, "admin_violation contains custom_violation(v, %s, %s) if some v in %s.violation\n\n", name, action, p.path)
	}
	m, err := ast.ParseModuleWithOpts(glueFile, glue.String(), ast.ParserOptions{RegoVersion: ast.RegoV1})
	if err != nil {
		return nil, fmt.Errorf("internal error: generated rego does not parse: %w", err)
	}
	return m, nil
}

// checkModules compiles one policy's modules, in packages, with the
// shipped rules and the generated module that joins them, so an error can
// be attributed to that policy.
func checkModules(ctx context.Context, modules []*ast.Module, packages []adminPackage) error {
	if len(modules) == 0 {
		return nil
	}
	glue, err := glueModule(packages)
	if err != nil {
		return err
	}
	_, err = prepare(ctx, decisionQuery, append(modules, glue))
	return err
}

// queryOptions are the options of every query: rego v1, the shipped
// capabilities, and strict builtin errors, so that a builtin that fails
// (to_number("x")) fails the evaluation instead of leaving its rule
// undefined, which could drop a violation silently.
func queryOptions(query string) []func(*rego.Rego) {
	return []func(*rego.Rego){
		rego.Query(query),
		rego.SetRegoVersion(ast.RegoV1),
		rego.Capabilities(shipped.Capabilities()),
		rego.StrictBuiltinErrors(true),
	}
}

// prepare compiles the shipped rules with extra modules and prepares query.
func prepare(ctx context.Context, query string, extra []*ast.Module, more ...func(*rego.Rego)) (rego.PreparedEvalQuery, error) {
	opts := append(queryOptions(query), more...)
	for _, f := range shipped.Admission() {
		opts = append(opts, rego.Module(f.Name, f.Source))
	}
	for _, m := range extra {
		opts = append(opts, rego.ParsedModule(m))
	}
	return rego.New(opts...).PrepareForEval(ctx)
}

// policyQueries prepares, on compiler (the shipped rules, every admin
// module and the generated module, compiled), one query per policy of
// owners: the violations of its packages, each completed with its name and
// enforcement action as admin_violation completes them.
func policyQueries(ctx context.Context, compiler *ast.Compiler, owners []*compiledPolicy, packages []adminPackage) ([]policyRules, error) {
	if compiler == nil {
		return nil, errors.New("internal error: the admin rules were prepared without a compiler")
	}
	out := make([]policyRules, 0, len(owners))
	for _, p := range owners {
		var sets []string
		for _, pkg := range packages {
			if pkg.policy != p.facts.Name {
				continue
			}
			name, _ := json.Marshal(pkg.policy)
			action, _ := json.Marshal(pkg.action)
			sets = append(sets, fmt.Sprintf("{x | some v in %s.violation; x := data.pipeguard.admission.custom_violation(v, %s, %s)}", pkg.path, name, action))
		}
		pq, err := rego.New(append(queryOptions("admin := "+strings.Join(sets, " | ")), rego.Compiler(compiler))...).PrepareForEval(ctx)
		if err != nil {
			return nil, fmt.Errorf("internal error: preparing the admin rules of PipeAccessPolicy %q: %w", p.facts.Name, err)
		}
		out = append(out, policyRules{policy: p.facts.Name, generation: p.generation, query: pq})
	}
	return out, nil
}

// regoIdent turns a policy name into a package segment for examples.
func regoIdent(name string) string {
	return strings.NewReplacer("-", "_", ".", "_").Replace(name)
}
