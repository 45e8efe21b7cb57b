package policy

import (
	"crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"math"
	"slices"
	"strings"
	"sync"

	"k8s.io/apimachinery/pkg/util/validation"
)

// Pods created from one template (every pod of a DaemonSet, every replica
// of a Deployment) present the same facts, and a generation's shipped
// rules decide the same way on the same facts. A generation therefore
// remembers the shipped rules' decisions, keyed on every fact those rules
// read. TestDecisionKeyCoversWhatTheRulesRead checks that the key keeps up
// with the rules. Admin-written rules may read any part of the input, so
// their violations are never remembered.

// The shipped rules read the namespace's name only to write it into
// messages (TestNamespaceNameOnlyInMessages keeps it so). So that one
// decision serves every namespace that presents the same facts, a cache
// shows the rules a placeholder for the name and writes the real name into
// the decision afterwards. The placeholder is random for each cache, and so
// for each generation, so a request cannot bring it in another fact, and it
// is a DNS label, so sprintf prints it as it prints a namespace name: %q
// quotes both without escaping anything.

// maxKeyLen bounds the facts worth remembering; a pod with more pipe
// mounts than this covers is evaluated every time.
const maxKeyLen = 16 << 10

// DefaultDecisionCacheBytes bounds the memory of a generation's decision
// cache when Options.DecisionCacheBytes is zero. An entry for a typical
// pod template takes under a kilobyte when it is allowed and about five
// when it is denied (a CSI node plugin's DaemonSet with four pipe mounts,
// each denied with its message), so 1 MiB holds about a thousand allowed
// decisions, or one to two hundred denied ones: more pod templates than a
// cluster usually runs with host path mounts. It is kept small because a full
// cache costs more than its bytes: pipeguard-webhook runs with GOGC=400,
// so the heap may grow to five times what is live.
const DefaultDecisionCacheBytes = 1 << 20

// decisionCache remembers the shipped rules' decisions of one generation.
// A nil *decisionCache remembers nothing.
//
// It is a bounded map from decision keys to decisions in two halves:
// lookups search both, inserts go to the newer one, and when that is full
// the older half is dropped. Entries in use keep moving to the newer half,
// so the cache approximates least-recently-used eviction at the cost of a
// map lookup. k8s.io/utils/lru was measured against it and kept out: keyed
// on interface{} behind a list, it allocates the key on every hit and took
// three to four times as long per lookup.
//
// A half is full when it holds halfEntries entries or when one more entry
// would take it past halfBytes, so the cache holds at most twice each. A
// decision's bytes are measured once, when it is stored (decisionBytes),
// and kept beside it, so a hit costs a map lookup more only when it moves
// an entry to the newer half. An entry bigger than a half is not
// remembered at all: dropping a half for it would evict everything and
// keep one decision.
type decisionCache struct {
	// placeholder stands for the namespace's name in the rules'
	// evaluations (see namespaceName).
	placeholder string

	halfEntries int
	halfBytes   int64

	mu       sync.Mutex
	new, old map[string]*Decision
	// newSizes and oldSizes hold the decisionBytes of each half's
	// decisions; newBytes and oldBytes the entryBytes of its entries.
	newSizes, oldSizes map[*Decision]int64
	newBytes, oldBytes int64
}

// newDecisionCache returns a cache of at most size entries and
// DefaultDecisionCacheBytes.
func newDecisionCache(size int) *decisionCache {
	return newBoundedDecisionCache(size, DefaultDecisionCacheBytes)
}

// newBoundedDecisionCache returns a cache of at most size entries (no
// bound when size is zero or less) whose entries take at most bytes.
func newBoundedDecisionCache(size int, bytes int64) *decisionCache {
	c := &decisionCache{placeholder: newPlaceholder(), halfEntries: math.MaxInt, halfBytes: max(bytes/2, 0)}
	if size > 0 {
		c.halfEntries = max(size/2, 1)
	}
	c.new, c.newSizes = c.newHalf(), make(map[*Decision]int64, c.halfHint())
	return c
}

// newHalf returns the string map of an empty half, sized for the entries
// a half can hold but never for more than maxHalfHint of them, so that a
// large bound costs no memory until entries arrive.
func (c *decisionCache) newHalf() map[string]*Decision {
	return make(map[string]*Decision, c.halfHint())
}

func (c *decisionCache) halfHint() int {
	const maxHalfHint = 512
	return min(c.halfEntries, maxHalfHint, int(min(c.halfBytes/entryOverhead, maxHalfHint)))
}

// cacheSlot says how to evaluate the facts a lookup found no decision for,
// and where store puts the decision.
type cacheSlot struct {
	// namespace is the namespace name the rules are to see: the real one,
	// or the placeholder.
	namespace string
	// name is the real name the placeholder stands for; "" when the rules
	// see the real name.
	name string
	// key is the decision key; "" when the decision is not to be
	// remembered.
	key string
}

// lookup returns the decision remembered for the facts of in, whose
// namespace matches the generation's policies as matches says, marked
// cached and written for in's namespace. When there is none, it returns
// nil and the slot to evaluate the rules with and store their decision in.
func (c *decisionCache) lookup(in *Input, matches []bool) (*Decision, cacheSlot) {
	var slot cacheSlot
	if in.Namespace != nil {
		slot.namespace = in.Namespace.Name
	}
	if c == nil {
		return nil, slot
	}
	if slot.name = c.namespaceName(in.Namespace); slot.name != "" {
		slot.namespace = c.placeholder
	}
	var buf [1024]byte
	key := decisionKey(buf[:0], in, matches, slot.name != "")
	if len(key) > maxKeyLen {
		return nil, slot
	}
	if d, ok := c.get(key); ok {
		return c.withName(d, slot.name, true), slot
	}
	slot.key = string(key)
	return nil, slot
}

// store remembers d, the rules' decision on the facts lookup gave slot
// for, and returns it written for the namespace of those facts.
func (c *decisionCache) store(slot cacheSlot, d *Decision) *Decision {
	if c == nil {
		return d
	}
	if slot.key != "" {
		size := decisionBytes(d)
		c.mu.Lock()
		// Another review of the same facts may have stored its decision
		// since the lookup; it is as good as d.
		if _, ok := c.new[slot.key]; !ok {
			c.putLocked(slot.key, d, size)
		}
		c.mu.Unlock()
	}
	return c.withName(d, slot.name, false)
}

func (c *decisionCache) get(key []byte) (*Decision, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if d, ok := c.new[string(key)]; ok {
		return d, true
	}
	d, ok := c.old[string(key)]
	if ok {
		c.putLocked(string(key), d, c.oldSizes[d])
	}
	return d, ok
}

// putLocked remembers d, of decisionBytes size, under key, which the
// newer half does not hold, unless the entry is bigger than a half.
func (c *decisionCache) putLocked(key string, d *Decision, size int64) {
	bytes := entryBytes(key, size)
	if bytes > c.halfBytes {
		return
	}
	if len(c.new) >= c.halfEntries || c.newBytes+bytes > c.halfBytes {
		// The dropped half's sizes map is emptied and reused, so that
		// moving an entry costs no more allocations than before sizes
		// were kept. It keeps the table of the most entries a half held,
		// whose slots entryOverhead counted while they were in use.
		sizes := c.oldSizes
		clear(sizes)
		if sizes == nil {
			sizes = make(map[*Decision]int64, c.halfHint())
		}
		c.old, c.oldSizes, c.oldBytes = c.new, c.newSizes, c.newBytes
		c.new, c.newSizes, c.newBytes = c.newHalf(), sizes, 0
	}
	c.new[key] = d
	c.newSizes[d] = size
	c.newBytes += bytes
}

// decisionKey appends to buf every fact of in that the shipped rules read:
// the namespace's name (unless placeholder says the rules see a
// placeholder instead) and which policies match it (matches), the pod's
// ServiceAccount and HostProcess, and every field of every mount. The
// policies themselves belong to the generation, which owns the cache.
// Strings are length-prefixed, so distinct facts give distinct keys.
func decisionKey(buf []byte, in *Input, matches []bool, placeholder bool) []byte {
	str := func(s string) {
		buf = binary.AppendUvarint(buf, uint64(len(s)))
		buf = append(buf, s...)
	}
	flag := func(b bool) {
		if b {
			buf = append(buf, 1)
		} else {
			buf = append(buf, 0)
		}
	}
	flag(in.Namespace != nil)
	if in.Namespace != nil {
		flag(placeholder)
		if !placeholder {
			str(in.Namespace.Name)
		}
	}
	for _, m := range matches {
		flag(m)
	}
	flag(in.Pod != nil)
	if in.Pod != nil {
		str(in.Pod.ServiceAccountName)
		flag(in.Pod.HostProcess)
	}
	buf = binary.AppendUvarint(buf, uint64(len(in.Mounts)))
	for i := range in.Mounts {
		m := &in.Mounts[i]
		str(m.Container)
		str(m.ContainerKind)
		str(m.Volume)
		str(m.VolumeSource)
		str(m.RawPath)
		str(m.Path)
		str(m.PathClass)
		str(m.Pipe)
		str(m.AmbiguousReason)
		flag(m.ReadOnly)
		flag(m.Privileged)
		flag(m.HostProcess)
		str(m.Image)
	}
	return buf
}

// newPlaceholder returns a namespace name no request can be expected to
// contain.
func newPlaceholder() string {
	var b [12]byte
	_, _ = rand.Read(b[:]) // never fails; see crypto/rand.Read
	return "pipeguard-namespace-" + hex.EncodeToString(b[:])
}

// namespaceName returns the name the placeholder stands for in an
// evaluation of ns, or "" when the rules must see the name itself: for no
// namespace, and for a name that is not a DNS label, which the API server
// never sends but an input written by hand may hold.
func (c *decisionCache) namespaceName(ns *Namespace) string {
	if ns == nil || c.placeholder == "" || !isDNSLabel(ns.Name) {
		return ""
	}
	return ns.Name
}

// isDNSLabel is validation.IsDNS1123Label without its regular expression,
// which would cost more than the rest of a cached review.
func isDNSLabel(s string) bool {
	if len(s) == 0 || len(s) > validation.DNS1123LabelMaxLength {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		alnum := 'a' <= c && c <= 'z' || '0' <= c && c <= '9'
		if !alnum && (c != '-' || i == 0 || i == len(s)-1) {
			return false
		}
	}
	return true
}

// withName returns d for namespace name, marked cached if it came from the
// cache, with the placeholder replaced by name wherever it appears. d
// itself is left as it is, since the cache shares it.
func (c *decisionCache) withName(d *Decision, name string, cached bool) *Decision {
	if !cached && (name == "" || len(d.Deny)+len(d.Warn)+len(d.DryRun) == 0) {
		return d
	}
	out := *d
	out.Cached = cached
	if name != "" {
		out.Deny = c.renamed(d.Deny, name)
		out.Warn = c.renamed(d.Warn, name)
		out.DryRun = c.renamed(d.DryRun, name)
	}
	return &out
}

func (c *decisionCache) renamed(vs []Violation, name string) []Violation {
	if len(vs) == 0 {
		return vs
	}
	r := func(s string) string { return strings.ReplaceAll(s, c.placeholder, name) }
	out := make([]Violation, len(vs))
	for i, v := range vs {
		v.Rule, v.Message = r(v.Rule), r(v.Message)
		v.Container, v.ContainerKind, v.Volume = r(v.Container), r(v.ContainerKind), r(v.Volume)
		v.Path, v.Pipe = r(v.Path), r(v.Pipe)
		v.Subject, v.Target, v.Reason, v.Remedy = r(v.Subject), r(v.Target), r(v.Reason), r(v.Remedy)
		if len(v.Policies) > 0 {
			v.Policies = slices.Clone(v.Policies)
			for j := range v.Policies {
				v.Policies[j] = r(v.Policies[j])
			}
		}
		out[i] = v
	}
	return out
}
