package policy

import (
	"sync"

	"github.com/open-policy-agent/opa/v1/ast"
)

// Which policies protect a pipe is the one question of the shipped rules
// whose cost grows with the number of policies: every pipes pattern of
// every policy, matched against every mount. A generation answers it here,
// once per pipe name, with the glob library and options (no separators)
// that rego's glob.match uses, and hands the answer to the rules as the
// mount fact protectedBy. TestProtectionMatchesRego checks that both agree.

// maxProtectionMemo bounds the pipe names a generation remembers.
const maxProtectionMemo = 4096

// protection answers, for one generation, which policies protect a pipe.
type protection struct {
	policies []*compiledPolicy // sorted by name
	all      protected         // every policy, for ambiguous paths
	none     protected

	mu     sync.RWMutex
	byPipe map[string]protected
}

// protected is an answer as policy names and as their rego array.
type protected struct {
	names []string
	term  *ast.Term
}

func newProtected(names []string) protected {
	if names == nil {
		names = []string{}
	}
	return protected{names: names, term: stringsTerm(names)}
}

func newProtection(policies []*compiledPolicy) *protection {
	names := make([]string, len(policies))
	for i, p := range policies {
		names[i] = p.facts.Name
	}
	return &protection{policies: policies, all: newProtected(names), none: newProtected(nil),
		byPipe: map[string]protected{}}
}

// of returns the policies that protect the pipe m reaches: those whose
// pipes patterns match m.Pipe when the pipe is known (the built-in default
// only if no other policy's do), every policy when the path is ambiguous,
// none otherwise. The result is shared; callers must
// not modify it.
func (p *protection) of(m *Mount) ([]string, *ast.Term) {
	switch m.PathClass {
	case "ambiguous":
		return p.all.names, p.all.term
	case "pipe":
	default:
		return p.none.names, p.none.term
	}
	p.mu.RLock()
	got, ok := p.byPipe[m.Pipe]
	p.mu.RUnlock()
	if ok {
		return got.names, got.term
	}
	var names []string
	var builtin *compiledPolicy
	for _, pol := range p.policies {
		switch {
		case pol.facts.Builtin:
			builtin = pol
		case pol.protects(m.Pipe):
			names = append(names, pol.facts.Name)
		}
	}
	// The built-in default protects what no other policy does.
	if len(names) == 0 && builtin != nil && builtin.protects(m.Pipe) {
		names = []string{builtin.facts.Name}
	}
	got = newProtected(names)
	p.mu.Lock()
	if len(p.byPipe) >= maxProtectionMemo {
		clear(p.byPipe)
	}
	p.byPipe[m.Pipe] = got
	p.mu.Unlock()
	return got.names, got.term
}
