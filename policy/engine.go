package policy

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"sync/atomic"
	"time"

	"github.com/open-policy-agent/opa/v1/ast"
	"github.com/open-policy-agent/opa/v1/metrics"
	"github.com/open-policy-agent/opa/v1/rego"

	"github.com/pipeguard/pipeguard/api/v1alpha1"
	"github.com/pipeguard/pipeguard/internal/option"
)

// Generation is one compiled, prepared set of policies. It is immutable.
type Generation struct {
	// Number increases with every successful compile of an Engine.
	Number int64
	// Policies names the policies in force, sorted; DefaultPolicyName
	// among them while the built-in default takes part.
	Policies []string
	// Default says what the built-in default protects.
	Default DefaultProtection

	policies []*compiledPolicy
	// query evaluates the shipped rules alone.
	query rego.PreparedEvalQuery
	// admin evaluates the admin-written modules, one query per policy
	// that brings its own rego, in the order of Policies.
	admin           []policyRules
	allowanceLabels []string
	// cache remembers the shipped rules' decisions; nil when off.
	cache *decisionCache
	// protection knows which policies protect a pipe.
	protection *protection
}

// Options configure an Engine.
type Options struct {
	// MaxConcurrent bounds concurrent evaluations; further callers wait
	// until a slot frees or their context ends. Defaults to 2×GOMAXPROCS.
	MaxConcurrent int
	// DecisionCacheSize is how many decisions of the shipped rules each
	// generation remembers, keyed on the facts those rules read; 0 turns
	// the cache off. Admin-written rules are evaluated on every review.
	DecisionCacheSize int
	// DecisionCacheBytes bounds the memory each generation's decision
	// cache keeps, as estimated when a decision is stored: its keys, its
	// decisions with every violation's strings and slices, and its map.
	// It holds at most DecisionCacheSize decisions within this bound; a
	// decision bigger than half of it is not remembered. Zero means
	// DefaultDecisionCacheBytes; less is an error.
	DecisionCacheBytes int64
	// AdminRuleTimeout bounds the time the admin-written rules of one
	// evaluation may take together; when they take longer they are
	// stopped, the evaluation fails with an *AdminRuleError naming the
	// policy whose rules were running, and AdminRuleTimeouts counts it.
	// Zero means DefaultAdminRuleTimeout; less is an error.
	AdminRuleTimeout time.Duration
	// MemoryLimit is the process's memory limit: admin rules that run long
	// (over 10 ms) while the heap holds more than three quarters of it are
	// stopped, the evaluation failing with an *AdminRuleError. Zero means
	// the Go runtime's limit (GOMEMLIMIT), when one is set; negative turns
	// the guard off.
	MemoryLimit int64
	// Namer names the options that the engine's messages name (see
	// package option), as the command that sets them does; nil keeps
	// their Go names (Options.AdminRuleTimeout).
	Namer option.Namer
}

// Engine evaluates admission inputs against the generation in force.
type Engine struct {
	current    atomic.Pointer[Generation]
	number     atomic.Int64
	slots      chan struct{}
	cacheSize  int
	cacheBytes int64

	adminTimeout time.Duration
	namer        option.Namer
	timeouts     *timeouts
	heap         heapGuard
}

// NewEngine returns an engine with the default policy in force.
func NewEngine(ctx context.Context, opts Options) (*Engine, error) {
	if opts.MaxConcurrent <= 0 {
		opts.MaxConcurrent = 2 * runtime.GOMAXPROCS(0)
	}
	if opts.DecisionCacheBytes < 0 {
		return nil, fmt.Errorf("policy options: DecisionCacheBytes is %d; want 0 for the default (%d) or a number of bytes", opts.DecisionCacheBytes, DefaultDecisionCacheBytes)
	}
	if opts.DecisionCacheBytes == 0 {
		opts.DecisionCacheBytes = DefaultDecisionCacheBytes
	}
	if opts.AdminRuleTimeout < 0 {
		return nil, errors.New(option.Sprintf("policy options: %s is %s; want 0 for the default (%s) or a positive duration", adminRuleTimeoutOption, opts.AdminRuleTimeout, DefaultAdminRuleTimeout).Render(opts.Namer))
	}
	if opts.AdminRuleTimeout == 0 {
		opts.AdminRuleTimeout = DefaultAdminRuleTimeout
	}
	e := &Engine{slots: make(chan struct{}, opts.MaxConcurrent), cacheSize: max(opts.DecisionCacheSize, 0), cacheBytes: opts.DecisionCacheBytes,
		adminTimeout: opts.AdminRuleTimeout, namer: opts.Namer, timeouts: newTimeouts(), heap: newHeapGuard(opts.MemoryLimit)}
	if _, err := e.Load(ctx, nil); err != nil {
		return nil, fmt.Errorf("internal error: the default policy does not compile: %w", err)
	}
	return e, nil
}

// Load compiles policies (the default policy when there are none) and, on
// success, puts them in force. On failure the generation in force stays and
// the error (a *CompileError) says which policies failed and why.
func (e *Engine) Load(ctx context.Context, policies []v1alpha1.PipeAccessPolicy) (*Generation, error) {
	gen, err := Compile(ctx, policies, e.number.Add(1))
	if err != nil {
		return nil, err
	}
	if e.cacheSize > 0 {
		gen.cache = newBoundedDecisionCache(e.cacheSize, e.cacheBytes)
	}
	e.current.Store(gen)
	return gen, nil
}

// AllowanceLabels lists the namespace label keys that grant pipe access in
// the generation in force: every key a namespaceSelector names, and
// always the default policy's label.
func (e *Engine) AllowanceLabels() []string { return e.current.Load().allowanceLabels }

// Current returns the generation in force.
func (e *Engine) Current() *Generation { return e.current.Load() }

// Evaluate decides on one input with the generation in force. Inputs with
// no host path mount are allowed without evaluating rego. An error means no
// decision was made; callers must not treat it as an allow. Decisions may
// be shared between callers, who must not modify them.
//
// The shipped rules' decision comes from the generation's cache when it
// holds one for the input's facts; the violations of admin-written rules,
// which may read any part of the input, are evaluated every time and added
// to it. The admin rules of one evaluation together get
// Options.AdminRuleTimeout; an *AdminRuleError says whose failed.
func (e *Engine) Evaluate(ctx context.Context, in *Input) (*Decision, error) {
	gen := e.current.Load()
	if len(in.Mounts) == 0 {
		return &Decision{Generation: gen.Number}, nil
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("not evaluating: %w", err)
	}
	matches := gen.namespaceMatches(in.Namespace)
	d, err := e.shippedDecision(ctx, gen, in, matches)
	if err != nil || len(gen.admin) == 0 {
		return d, err
	}
	admin, err := e.evaluateAdmin(ctx, gen, in, matches)
	if err != nil {
		return nil, err
	}
	return d.with(admin), nil
}

// shippedDecision returns the shipped rules' decision on in, from the
// generation's cache when it holds one for in's facts.
func (e *Engine) shippedDecision(ctx context.Context, gen *Generation, in *Input, matches []bool) (*Decision, error) {
	d, slot := gen.cache.lookup(in, matches)
	if d != nil {
		return d, nil
	}
	if err := e.acquire(ctx); err != nil {
		return nil, err
	}
	defer e.release()
	d, err := gen.evaluate(ctx, in, matches, slot.namespace)
	if err != nil {
		return nil, err
	}
	return gen.cache.store(slot, d), nil
}

// namespaceMatches reports, for each policy of the generation, whether it
// allows namespace ns by name or label selector.
func (g *Generation) namespaceMatches(ns *Namespace) []bool {
	out := make([]bool, len(g.policies))
	for i, p := range g.policies {
		out[i] = p.namespaceMatch(ns)
	}
	return out
}

// policyTerms returns the generation's policies as rego input, with
// matches (from namespaceMatches) as their namespace matches, and which
// policies protect each mount of in.
func (g *Generation) policyTerms(in *Input, matches []bool) (policies, protectedBy []*ast.Term) {
	policies = make([]*ast.Term, len(g.policies))
	for i, p := range g.policies {
		policies[i] = p.term(matches[i])
	}
	protectedBy = make([]*ast.Term, len(in.Mounts))
	for i := range in.Mounts {
		_, protectedBy[i] = g.protection.of(&in.Mounts[i])
	}
	return policies, protectedBy
}

// noMetrics keeps OPA from timing the phases of every evaluation; the
// webhook measures whole reviews.
var noMetrics = metrics.NoOp()

// evaluate decides on one input with this generation's shipped rules;
// matches are its policies' namespaceMatches for the input's namespace,
// whose name the rules see as nsName.
func (g *Generation) evaluate(ctx context.Context, in *Input, matches []bool, nsName string) (*Decision, error) {
	policies, protectedBy := g.policyTerms(in, matches)
	rs, err := g.query.Eval(ctx, rego.EvalParsedInput(in.shippedValue(nsName, policies, protectedBy)), rego.EvalMetrics(noMetrics), asTerm)
	if err != nil {
		return nil, fmt.Errorf("evaluating policy generation %d: %w", g.Number, err)
	}
	return decisionOf(rs, g.Number)
}

// acquire waits for an evaluation slot, which release frees.
func (e *Engine) acquire(ctx context.Context) error {
	select {
	case e.slots <- struct{}{}:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("waiting for an evaluation slot: %w", ctx.Err())
	}
}

func (e *Engine) release() { <-e.slots }

// Document returns the input exactly as this generation's rules see it,
// with the policies in force and their namespace matches filled in. It is
// for showing admins what their rules receive; evaluation does not need it.
func (g *Generation) Document(in *Input) *Input {
	out := *in
	out.Version = InputVersion
	out.Policies = make([]PolicyFacts, len(g.policies))
	for i, match := range g.namespaceMatches(in.Namespace) {
		out.Policies[i] = g.policies[i].facts
		out.Policies[i].NamespaceMatch = match
	}
	out.Mounts = make([]Mount, len(in.Mounts))
	for i, m := range in.Mounts {
		m.ProtectedBy, _ = g.protection.of(&m)
		out.Mounts[i] = m
	}
	if out.Request.Groups == nil {
		out.Request.Groups = []string{}
	}
	return &out
}
