package policy

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/gobwas/glob"
	"github.com/open-policy-agent/opa/v1/ast"
	"github.com/open-policy-agent/opa/v1/rego"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/pipeguard/pipeguard/api/v1alpha1"
	"github.com/pipeguard/pipeguard/pipepath"
)

// PolicyError is a problem with one PipeAccessPolicy. Err is an ast.Errors
// (file:row: code: message) for rego that does not compile.
type PolicyError struct {
	Policy string
	Err    error
}

func (e *PolicyError) Error() string {
	return fmt.Sprintf("PipeAccessPolicy %q: %v", e.Policy, e.Err)
}

func (e *PolicyError) Unwrap() error { return e.Err }

// CompileError lists every policy that kept a policy set from compiling.
type CompileError struct {
	Policies []*PolicyError
}

func (e *CompileError) Error() string {
	msgs := make([]string, len(e.Policies))
	for i, p := range e.Policies {
		msgs[i] = p.Error()
	}
	return strings.Join(msgs, "; ")
}

// compiledPolicy is one policy's settings, ready for per-request facts.
type compiledPolicy struct {
	facts      PolicyFacts
	generation int64           // the policy's metadata.generation
	globs      []*glob.Pattern // facts.Pipes, compiled
	namespaces map[string]bool
	selector   labels.Selector // nil: no selector
	// terms holds the policy's rego input, rendered once, for a namespace
	// the policy does not allow ([0]) and one it does ([1]).
	terms [2]*ast.Term
}

func (p *compiledPolicy) term(namespaceMatch bool) *ast.Term {
	if namespaceMatch {
		return p.terms[1]
	}
	return p.terms[0]
}

func (p *compiledPolicy) render() {
	for i, match := range []bool{false, true} {
		f := p.facts
		f.NamespaceMatch = match
		p.terms[i] = f.term()
	}
}

// namespaceMatch reports whether the policy allows namespace ns by name or
// by label selector.
func (p *compiledPolicy) namespaceMatch(ns *Namespace) bool {
	if ns == nil {
		return false
	}
	if p.namespaces[ns.Name] {
		return true
	}
	return p.selector != nil && p.selector.Matches(labels.Set(ns.Labels))
}

// protects reports whether one of the policy's pipes patterns matches pipe.
func (p *compiledPolicy) protects(pipe string) bool {
	for _, g := range p.globs {
		if g.Match(pipe) {
			return true
		}
	}
	return false
}

// compilePolicy validates a policy's spec and parses its rego modules.
func compilePolicy(p *v1alpha1.PipeAccessPolicy) (*compiledPolicy, []*ast.Module, error) {
	spec := &p.Spec
	if len(spec.Pipes) == 0 {
		return nil, nil, errors.New("spec.pipes is empty; list at least one pipe name pattern, e.g. \"csi-proxy-*\"")
	}
	cp := &compiledPolicy{
		generation: p.Generation,
		facts: PolicyFacts{
			Name:              p.Name,
			EnforcementAction: string(spec.EnforcementAction),
			Allow: AllowFacts{
				Privileged:      boolOr(spec.Allow.Privileged, false),
				HostProcess:     boolOr(spec.Allow.HostProcess, true),
				Namespaces:      nonNil(spec.Allow.Namespaces),
				ServiceAccounts: nonNil(spec.Allow.ServiceAccounts),
			},
		},
		namespaces: make(map[string]bool, len(spec.Allow.Namespaces)),
	}
	if cp.facts.EnforcementAction == "" {
		cp.facts.EnforcementAction = string(v1alpha1.Deny)
	}
	if v1alpha1.EnforcementAction(cp.facts.EnforcementAction).Strictness() == 0 {
		return nil, nil, fmt.Errorf("spec.enforcementAction %q is not one of deny, warn, dryrun", spec.EnforcementAction)
	}
	for i, pattern := range spec.Pipes {
		// Fold the pattern exactly as pipe names are folded, so both sides of
		// a match use one spelling.
		pattern = pipepath.CanonicalPipeName(strings.TrimSpace(pattern))
		if pattern == "" {
			return nil, nil, fmt.Errorf("spec.pipes[%d] is empty; give a pipe name pattern such as \"csi-proxy-*\"", i)
		}
		if strings.ContainsAny(pattern, `/`) || strings.HasPrefix(pattern, `\`) {
			return nil, nil, fmt.Errorf("spec.pipes[%d] %q must be a pipe name without a prefix, e.g. \"csi-proxy-disk-v1\" rather than \"\\\\.\\pipe\\csi-proxy-disk-v1\"", i, spec.Pipes[i])
		}
		g, err := glob.Compile(pattern)
		if err != nil {
			return nil, nil, fmt.Errorf("spec.pipes[%d] %q is not a valid glob pattern: %w", i, spec.Pipes[i], err)
		}
		cp.facts.Pipes = append(cp.facts.Pipes, pattern)
		cp.globs = append(cp.globs, g)
	}
	for _, ns := range spec.Allow.Namespaces {
		cp.namespaces[ns] = true
	}
	if sel := spec.Allow.NamespaceSelector; sel != nil {
		s, err := metav1.LabelSelectorAsSelector(sel)
		if err != nil {
			return nil, nil, fmt.Errorf("spec.allow.namespaceSelector: %w", err)
		}
		if err := checkSelectorKeys(sel); err != nil {
			return nil, nil, err
		}
		cp.selector = s
		cp.facts.Allow.NamespaceSelector = selectorFacts(sel)
	}

	cp.render()

	modules, err := parseModules(p)
	if err != nil {
		return nil, nil, err
	}
	return cp, modules, nil
}

// CheckPolicy reports whether a policy compiles on its own with the shipped
// rules: its spec is valid and its rego parses, type-checks and keeps to its
// package.
func CheckPolicy(ctx context.Context, p *v1alpha1.PipeAccessPolicy) error {
	cp, modules, err := compilePolicy(p)
	if err != nil {
		return err
	}
	return checkModules(ctx, modules, cp.packages(modules))
}

// Compile builds a Generation from a set of policies. An empty set compiles
// the default policy. Every policy is checked on its own first, so that an
// error is reported against the policy that caused it.
func Compile(ctx context.Context, policies []v1alpha1.PipeAccessPolicy, number int64) (*Generation, error) {
	sorted := make([]*v1alpha1.PipeAccessPolicy, len(policies))
	for i := range policies {
		sorted[i] = &policies[i]
	}
	sort.Slice(sorted, func(i, j int) bool { return sorted[i].Name < sorted[j].Name })

	gen := &Generation{Number: number}
	var adminModules []*ast.Module
	var packages []adminPackage
	var owners []*compiledPolicy // the policies with admin modules, in order
	owner := map[string]string{} // package path -> policy name
	var failed []*PolicyError
	for _, p := range sorted {
		cp, modules, err := compilePolicy(p)
		if err == nil && p.Name == DefaultPolicyName {
			err = fmt.Errorf("the name %q is reserved for pipeguard's built-in policy; give this PipeAccessPolicy another name", DefaultPolicyName)
		}
		var own []adminPackage
		if err == nil {
			own = cp.packages(modules)
			err = checkModules(ctx, modules, own)
		}
		for _, m := range modules {
			pkg := m.Package.Path.String()
			if other, taken := owner[pkg]; taken && other != p.Name && err == nil {
				err = fmt.Errorf("%s: package %s is already used by PipeAccessPolicy %q; give each policy its own package",
					m.Package.Location.File, strings.TrimPrefix(pkg, "data."), other)
			}
		}
		if err != nil {
			failed = append(failed, &PolicyError{Policy: p.Name, Err: err})
			continue
		}
		for _, m := range modules {
			owner[m.Package.Path.String()] = p.Name
		}
		adminModules = append(adminModules, modules...)
		packages = append(packages, own...)
		if len(own) > 0 {
			owners = append(owners, cp)
		}
		gen.policies = append(gen.policies, cp)
		gen.Policies = append(gen.Policies, p.Name)
	}
	if len(failed) > 0 {
		return nil, &CompileError{Policies: failed}
	}
	if err := gen.addDefault(); err != nil {
		return nil, err
	}
	var err error
	if gen.query, err = shippedQuery(); err != nil {
		return nil, fmt.Errorf("internal error: the shipped rules do not compile: %w", err)
	}
	if len(adminModules) > 0 {
		glue, err := glueModule(packages)
		if err != nil {
			return nil, err
		}
		// Compiling every admin module together finds the conflicts
		// between policies that each compile alone; each policy's
		// violations are then a query of their own on that compiler, so
		// that each can have its deadline and be named when it fails.
		var compiler *ast.Compiler
		if _, err := prepare(ctx, adminQuery, append(adminModules, glue), rego.CompilerHook(func(c *ast.Compiler) { compiler = c })); err != nil {
			return nil, &CompileError{Policies: []*PolicyError{{Policy: strings.Join(gen.Policies, ","), Err: err}}}
		}
		if gen.admin, err = policyQueries(ctx, compiler, owners, packages); err != nil {
			return nil, err
		}
	}
	gen.allowanceLabels = allowanceLabels(gen.policies)
	gen.protection = newProtection(gen.policies)
	return gen, nil
}

func selectorFacts(sel *metav1.LabelSelector) *SelectorFacts {
	f := &SelectorFacts{MatchLabels: sel.MatchLabels, MatchExpressions: []SelectorRequirement{}}
	if f.MatchLabels == nil {
		f.MatchLabels = map[string]string{}
	}
	for _, r := range sel.MatchExpressions {
		f.MatchExpressions = append(f.MatchExpressions, SelectorRequirement{Key: r.Key, Operator: string(r.Operator), Values: nonNil(r.Values)})
	}
	return f
}

func boolOr(b *bool, def bool) bool {
	if b == nil {
		return def
	}
	return *b
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// allowanceLabels collects the label keys the policies' namespace selectors
// read, plus the default policy's label. Every one of them is under
// GuardedLabelDomain or is NameLabel (checkSelectorKeys).
func allowanceLabels(policies []*compiledPolicy) []string {
	keys := map[string]bool{AllowLabel: true}
	for _, p := range policies {
		if s := p.facts.Allow.NamespaceSelector; s != nil {
			for k := range s.MatchLabels {
				keys[k] = true
			}
			for _, r := range s.MatchExpressions {
				keys[r.Key] = true
			}
		}
	}
	out := make([]string, 0, len(keys))
	for k := range keys {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
