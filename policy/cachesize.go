package policy

import "unsafe"

// The decision cache is bounded in bytes: what follows estimates the
// memory an entry keeps, as the Go allocator takes it.

// heldBytes returns the entryBytes of every entry held, counting an entry
// in both halves twice, as its two map slots are.
func (c *decisionCache) heldBytes() int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.newBytes + c.oldBytes
}

// entryOverhead is what an entry costs its half beyond its key's and its
// decision's own bytes: a slot in each of the half's maps, with its
// control byte, in tables at most 7/8 full that may just have doubled.
const entryOverhead = 2 * 8 * (int64(unsafe.Sizeof("")+unsafe.Sizeof(&Decision{})+1) +
	int64(unsafe.Sizeof(&Decision{})+unsafe.Sizeof(int64(0))+1)) / 7

// entryBytes estimates the memory an entry of key and a decision of
// decisionBytes size keeps in a half.
func entryBytes(key string, size int64) int64 {
	return entryOverhead + allocBytes(len(key)) + size
}

// decisionBytes estimates the memory d keeps: the decision and every
// slice and string its violations hold, each counted once however many
// violations share it, as the allocator would round it. It errs high: a
// string the rules share with other decisions is counted in each.
func decisionBytes(d *Decision) int64 {
	n := allocBytes(int(unsafe.Sizeof(*d)))
	seen := make(map[unsafe.Pointer]struct{})
	once := func(p unsafe.Pointer, size int) {
		if size == 0 {
			return
		}
		if _, ok := seen[p]; ok {
			return
		}
		seen[p] = struct{}{}
		n += allocBytes(size)
	}
	str := func(s string) { once(unsafe.Pointer(unsafe.StringData(s)), len(s)) }
	for _, vs := range [...][]Violation{d.Deny, d.Warn, d.DryRun} {
		once(unsafe.Pointer(unsafe.SliceData(vs)), cap(vs)*int(unsafe.Sizeof(Violation{})))
		for i := range vs {
			v := &vs[i]
			for _, s := range [...]string{v.Rule, v.Message, string(v.Action), v.Container, v.ContainerKind,
				v.Volume, v.Path, v.Pipe, v.Subject, v.Target, v.Reason, v.Remedy} {
				str(s)
			}
			once(unsafe.Pointer(unsafe.SliceData(v.Policies)), cap(v.Policies)*int(unsafe.Sizeof("")))
			for _, p := range v.Policies {
				str(p)
			}
		}
	}
	return n
}

// allocBytes is what the Go allocator takes for an object of n bytes: a
// size class at most an eighth above n (sixteen bytes at least) up to
// 32 KiB, whole 8 KiB pages above.
func allocBytes(n int) int64 {
	const largeObject, page = 32 << 10, 8 << 10
	switch {
	case n <= 0:
		return 0
	case n <= 16:
		return 16
	case n <= largeObject:
		return int64(n+n/8+15) &^ 15
	}
	return int64(n+page-1) &^ (page - 1)
}
