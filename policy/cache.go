package policy

import (
	"encoding/binary"
	"sync"
)

// Pods created from one template (every pod of a DaemonSet, every replica
// of a Deployment) present the same facts, and a generation's shipped
// rules decide the same way on the same facts. A generation without
// admin-written rego therefore remembers its decisions, keyed on every fact
// the shipped rules read. TestDecisionKeyCoversWhatTheRulesRead checks that
// the key keeps up with the rules; generations with admin modules never
// cache, since an admin rule may read any part of the input.

// maxKeyLen bounds the facts worth remembering; a pod with more pipe
// mounts than this covers is evaluated every time.
const maxKeyLen = 16 << 10

// decisionCache is a bounded map from decision keys to decisions. It holds
// two halves: lookups search both, inserts go to the newer one, and when
// that is full the older half is dropped. Entries in use keep moving to the
// newer half, so the cache approximates least-recently-used eviction at the
// cost of a map lookup.
type decisionCache struct {
	mu       sync.Mutex
	half     int
	new, old map[string]*Decision
}

func newDecisionCache(size int) *decisionCache {
	half := max(size/2, 1)
	return &decisionCache{half: half, new: make(map[string]*Decision, half)}
}

func (c *decisionCache) get(key []byte) (*Decision, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if d, ok := c.new[string(key)]; ok {
		return d, true
	}
	d, ok := c.old[string(key)]
	if ok {
		c.putLocked(string(key), d)
	}
	return d, ok
}

func (c *decisionCache) put(key []byte, d *Decision) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.putLocked(string(key), d)
}

func (c *decisionCache) putLocked(key string, d *Decision) {
	if len(c.new) >= c.half {
		c.old, c.new = c.new, make(map[string]*Decision, c.half)
	}
	c.new[key] = d
}

// decisionKey appends to buf every fact of in that the shipped rules read:
// the namespace's name and which policies match it (matches, from
// namespaceMatches), the pod's ServiceAccount and HostProcess, and every
// field of every mount. The policies themselves belong to the generation,
// which owns the cache. Strings are length-prefixed, so distinct facts give
// distinct keys.
func (g *Generation) decisionKey(buf []byte, in *Input, matches []bool) []byte {
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
		str(in.Namespace.Name)
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
	}
	return buf
}
