package gate

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/go-logr/logr"
	"github.com/open-policy-agent/opa/v1/ast"
	"github.com/open-policy-agent/opa/v1/rego"
	"k8s.io/utils/lru"

	"github.com/pipeguard/pipeguard/internal/option"
	shipped "github.com/pipeguard/pipeguard/rego"
)

// decisionQuery reads the deny set.
const decisionQuery = "deny := data.pipeguard.agent.deny"

// adminRoot is the package every admin module must live below.
var adminRoot = ast.MustParseRef("data.pipeguard.agent.policy")

// Options configures an Engine.
type Options struct {
	// PolicyDir holds admin policies (*.rego, not *_test.rego); empty means
	// the shipped rules alone.
	PolicyDir string
	// Log receives reload results.
	Log logr.Logger
}

// Engine decides with the policies in force. It is safe for concurrent use.
type Engine struct {
	o       Options
	current atomic.Pointer[generation]
	number  atomic.Int64
	mu      sync.Mutex // serializes reloads
}

type generation struct {
	number      int64
	files       []string
	fingerprint [32]byte
	query       rego.PreparedEvalQuery
	// neverDenies is set when partial evaluation proves that no input can
	// produce a denial (the shipped rules alone): requests are then allowed
	// without evaluating.
	neverDenies bool
	// cache remembers this generation's decisions by input (cacheKey); nil
	// when a rule calls a nondeterministic builtin.
	cache *lru.Cache
}

// Decision is the outcome for one request.
type Decision struct {
	Allowed bool
	// Rule, Policy and Message describe the first denial (sorted by rule).
	Rule, Policy, Message string
	// Denials counts every denial.
	Denials int
	// Generation is the policy generation that decided.
	Generation int64
}

// New compiles the shipped rules with the admin policies in o.PolicyDir.
// A directory that does not compile is an error here: there is no last
// good policy yet, and the shipped rules alone would allow more than the
// admin meant.
func New(ctx context.Context, o Options) (*Engine, error) {
	e := &Engine{o: o}
	if _, err := e.Reload(ctx); err != nil {
		return nil, err
	}
	return e, nil
}

// Generation returns the number of the generation in force.
func (e *Engine) Generation() int64 { return e.current.Load().number }

// Files returns the admin policy files in force.
func (e *Engine) Files() []string { return append([]string(nil), e.current.Load().files...) }

// Reload reads the policy directory and, if its content changed and it
// compiles, puts it in force. It reports whether a new generation is in
// force. On error the generation in force stays.
func (e *Engine) Reload(ctx context.Context) (bool, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	files, fp, err := readDir(e.o.PolicyDir)
	if err != nil {
		return false, err
	}
	if cur := e.current.Load(); cur != nil && cur.fingerprint == fp {
		return false, nil
	}
	pq, never, modules, err := compile(ctx, files)
	if err != nil {
		return false, err
	}
	gen := &generation{number: e.number.Add(1), fingerprint: fp, query: pq, neverDenies: never, cache: newDecisionCache(modules)}
	for _, f := range files {
		gen.files = append(gen.files, f.Name)
	}
	e.current.Store(gen)
	return true, nil
}

// OptionPolicyDir is the key of Options.PolicyDir in messages (see package
// option).
const OptionPolicyDir = "gate.policy-dir"

// readDir reads the admin policy files and fingerprints them.
func readDir(dir string) ([]shipped.File, [32]byte, error) {
	var files []shipped.File
	h := sha256.New()
	if dir == "" {
		return nil, [32]byte(h.Sum(nil)), nil
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, [32]byte{}, option.Errorf("reading agent policies: %w; create the directory or fix %s", err, option.Name{Key: OptionPolicyDir, Field: "Options.PolicyDir"})
	}
	for _, en := range entries {
		name := en.Name()
		// Dot entries are the ..data links of ConfigMap volumes.
		if strings.HasPrefix(name, ".") || !strings.HasSuffix(name, ".rego") || strings.HasSuffix(name, "_test.rego") {
			continue
		}
		path := filepath.Join(dir, name)
		b, err := os.ReadFile(path)
		if errors.Is(err, fs.ErrNotExist) {
			continue // removed while reading; the next reload sees the result
		}
		if err != nil {
			return nil, [32]byte{}, fmt.Errorf("reading agent policy %s: %w", path, err)
		}
		if info, err := os.Stat(path); err == nil && info.IsDir() {
			continue
		}
		files = append(files, shipped.File{Name: path, Source: string(b)})
	}
	sort.Slice(files, func(i, j int) bool { return files[i].Name < files[j].Name })
	for _, f := range files {
		fmt.Fprintf(h, "%s\x00%d\x00%s", f.Name, len(f.Source), f.Source)
	}
	return files, [32]byte(h.Sum(nil)), nil
}

// compile parses the admin files, checks their packages, and prepares the
// decision query over them and the shipped rules. never reports that
// partial evaluation, with the whole input unknown, found no way to deny;
// modules are the parsed shipped and admin modules.
func compile(ctx context.Context, files []shipped.File) (pq rego.PreparedEvalQuery, never bool, modules []*ast.Module, err error) {
	opts := []func(*rego.Rego){
		rego.Query(decisionQuery),
		rego.SetRegoVersion(ast.RegoV1),
		rego.Capabilities(shipped.Capabilities()),
		rego.StrictBuiltinErrors(true),
	}
	for _, f := range shipped.Agent() {
		m, err := ast.ParseModuleWithOpts(f.Name, f.Source, ast.ParserOptions{RegoVersion: ast.RegoV1})
		if err != nil {
			return pq, false, nil, fmt.Errorf("shipped agent rules %s do not parse: %w", f.Name, err)
		}
		modules = append(modules, m)
		opts = append(opts, rego.ParsedModule(m))
	}
	for _, f := range files {
		m, err := ast.ParseModuleWithOpts(f.Name, f.Source, ast.ParserOptions{RegoVersion: ast.RegoV1})
		if err != nil {
			return pq, false, nil, fmt.Errorf("agent policy does not parse: %w", err)
		}
		if err := shipped.CheckAdminPackage(f.Name, m, adminRoot, ident(f.Name)); err != nil {
			return pq, false, nil, err
		}
		modules = append(modules, m)
		opts = append(opts, rego.ParsedModule(m))
	}
	pq, err = rego.New(opts...).PrepareForEval(ctx)
	if err != nil {
		return pq, false, nil, fmt.Errorf("agent policy does not compile: %w", err)
	}
	opts[0] = rego.Query("data.pipeguard.agent.deny[_]")
	partial, err := rego.New(append(opts, rego.Unknowns([]string{"input"}))...).Partial(ctx)
	if err != nil {
		return pq, false, nil, fmt.Errorf("agent policy: partial evaluation: %w", err)
	}
	return pq, len(partial.Queries) == 0, modules, nil
}

// NeverDenies reports whether the policies in force can deny at all.
func (e *Engine) NeverDenies() bool { return e.current.Load().neverDenies }

func ident(file string) string {
	base := strings.TrimSuffix(filepath.Base(file), ".rego")
	return strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '_' {
			return r
		}
		return '_'
	}, strings.ToLower(base))
}

// Decide evaluates the policies in force on in, or returns the decision
// the same generation made on an equal input. An error means no decision
// was made: callers must deny.
func (e *Engine) Decide(ctx context.Context, in *Input) (Decision, error) {
	gen := e.current.Load()
	if gen.neverDenies {
		return Decision{Allowed: true, Generation: gen.number}, nil
	}
	var key string
	cacheable := false
	if gen.cache != nil {
		if key, cacheable = in.cacheKey(); cacheable {
			if d, ok := gen.cache.Get(key); ok {
				return d.(Decision), nil
			}
		}
	}
	d, err := gen.decide(ctx, in)
	if err == nil && cacheable {
		gen.cache.Add(key, d)
	}
	return d, err
}

// decide evaluates the generation's rules on in.
func (gen *generation) decide(ctx context.Context, in *Input) (Decision, error) {
	rs, err := gen.query.Eval(ctx, rego.EvalParsedInput(in.value()))
	if err != nil {
		return Decision{Generation: gen.number}, fmt.Errorf("evaluating agent policy generation %d: %w", gen.number, err)
	}
	if len(rs) != 1 {
		return Decision{Generation: gen.number}, fmt.Errorf("evaluating agent policy generation %d: got %d results, want 1", gen.number, len(rs))
	}
	set, ok := rs[0].Bindings["deny"].([]any)
	if !ok {
		return Decision{Generation: gen.number}, fmt.Errorf("agent policy generation %d: deny is %T, want a set", gen.number, rs[0].Bindings["deny"])
	}
	d := Decision{Allowed: len(set) == 0, Denials: len(set), Generation: gen.number}
	for _, el := range set {
		obj, _ := el.(map[string]any)
		rule, _ := obj["rule"].(string)
		if d.Rule == "" || rule < d.Rule {
			d.Rule = rule
			d.Policy, _ = obj["policy"].(string)
			d.Message, _ = obj["msg"].(string)
		}
	}
	return d, nil
}
