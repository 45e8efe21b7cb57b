package policy

import (
	"strconv"
	"testing"
)

// benchDenial is the decision the cache benchmarks store.
var benchDenial = &Decision{Evaluated: true, Deny: []Violation{{Rule: "pipe-access", Message: "a denial", Action: Deny}}}

// distinctInputs returns n inputs that differ only in their
// ServiceAccount, so that each has a cache key of its own.
func distinctInputs(n int) []*Input {
	ins := make([]*Input, n)
	for i := range ins {
		ins[i] = cacheTestInput("team-a")
		ins[i].Pod.ServiceAccountName = "sa-" + strconv.Itoa(i)
	}
	return ins
}

// BenchmarkDecisionCacheHit: the lookup a review of a pod whose facts are
// remembered costs, in the newer half and in the older half (from which a
// hit moves the entry to the newer one), without evaluating anything.
func BenchmarkDecisionCacheHit(b *testing.B) {
	b.Run("newer-half", func(b *testing.B) {
		c := newDecisionCache(1024)
		in := cacheTestInput("team-a")
		_, slot := c.lookup(in, nil)
		c.store(slot, benchDenial)
		b.ReportAllocs()
		for b.Loop() {
			if got, _ := c.lookup(in, nil); got == nil {
				b.Fatal("no decision remembered")
			}
		}
	})
	b.Run("older-half", func(b *testing.B) {
		// Two entries in halves of one: each hit finds its entry in the
		// older half and moves it to the newer.
		c := newDecisionCache(2)
		ins := [2]*Input{cacheTestInput("team-a"), cacheTestInput("team-a")}
		ins[1].Pod.ServiceAccountName = "other"
		for _, in := range ins {
			_, slot := c.lookup(in, nil)
			c.store(slot, benchDenial)
		}
		b.ReportAllocs()
		i := 0
		for b.Loop() {
			if got, _ := c.lookup(ins[i%2], nil); got == nil {
				b.Fatal("no decision remembered")
			}
			i++
		}
	})
}

// BenchmarkDecisionCacheStore: a miss and the store of its decision, with
// the cache full, so that stores keep dropping halves.
func BenchmarkDecisionCacheStore(b *testing.B) {
	c := newDecisionCache(1024)
	ins := distinctInputs(4096)
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		in := ins[i%len(ins)]
		if got, slot := c.lookup(in, nil); got == nil {
			c.store(slot, benchDenial)
		}
		i++
	}
}

// BenchmarkDecisionCacheMixed: reviews of 768 pod templates in a random
// order through a cache of 1024 decisions: hits in either half, moves to
// the newer half, dropped halves and the misses they cause, stored again.
func BenchmarkDecisionCacheMixed(b *testing.B) {
	c := newDecisionCache(1024)
	ins := distinctInputs(768)
	order := make([]int, 1<<16)
	x := uint32(1)
	for i := range order {
		x ^= x << 13
		x ^= x >> 17
		x ^= x << 5
		order[i] = int(x % uint32(len(ins)))
	}
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		in := ins[order[i%len(order)]]
		if got, slot := c.lookup(in, nil); got == nil {
			c.store(slot, benchDenial)
		}
		i++
	}
}
