package gate

import (
	"encoding/binary"
	"encoding/json"
	"strconv"

	"github.com/open-policy-agent/opa/v1/ast"
	"k8s.io/utils/lru"

	"github.com/pipeguard/pipeguard/agent/identity"
)

// decisionCacheSize bounds the decisions one policy generation remembers.
// A CSI driver repeats a handful of calls with the same arguments (a node
// plugin polling PathExists or GetVolumeStats on its mounts), so a few
// thousand entries cover a node.
const decisionCacheSize = 4096

// newDecisionCache returns the cache of a generation compiled from
// modules, or nil when a rule calls a builtin whose result may differ
// between two evaluations of the same input (time.now_ns, rand.intn,
// uuid.rfc4122, …): such a generation evaluates every call.
func newDecisionCache(modules []*ast.Module) *lru.Cache {
	for _, m := range modules {
		if callsNondeterministic(m) {
			return nil
		}
	}
	return lru.New(decisionCacheSize)
}

// callsNondeterministic reports whether m calls a nondeterministic
// builtin anywhere, in a rule body, a function or a default value.
func callsNondeterministic(m *ast.Module) bool {
	found := false
	ast.WalkTerms(m, func(t *ast.Term) bool {
		if call, ok := t.Value.(ast.Call); ok && len(call) > 0 {
			if b := ast.BuiltinMap[call[0].String()]; b != nil && b.Nondeterministic {
				found = true
			}
		}
		return found
	})
	if found {
		return true
	}
	ast.WalkExprs(m, func(e *ast.Expr) bool {
		if e.IsCall() {
			if b := ast.BuiltinMap[e.Operator().String()]; b != nil && b.Nondeterministic {
				found = true
			}
		}
		return found
	})
	return found
}

// cacheKey encodes everything the input document holds (see value) so that
// two inputs share a key only when their documents are equal: every string
// is length-prefixed, so no value can run into the next. ok is false when
// the request cannot be encoded; that input is evaluated, not cached.
func (in *Input) cacheKey() (key string, ok bool) {
	c := in.Caller
	if c == nil {
		c = &identity.Caller{UID: -1, GID: -1}
	}
	req := []byte("{}")
	if in.Request != nil {
		var err error
		if req, err = json.Marshal(in.Request); err != nil {
			return "", false
		}
	}
	b := make([]byte, 0, 256+len(req))
	for _, s := range [...]string{
		in.Group, in.Version, in.Method, in.FullMethod, strconv.FormatBool(in.Mutating),
		c.Username(), c.Source, strconv.Itoa(c.PID), c.ProcessStart, strconv.FormatInt(c.UID, 10), strconv.FormatInt(c.GID, 10),
		c.SID, c.ContainerID, c.Runtime, c.PodUID, c.PodName, c.Namespace, c.ServiceAccount, c.Attribution(),
	} {
		b = binary.AppendUvarint(b, uint64(len(s)))
		b = append(b, s...)
	}
	b = append(b, req...)
	return string(b), true
}
