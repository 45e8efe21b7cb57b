package policy

import (
	"context"
	"fmt"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"unsafe"
)

// cloneDecision returns d with every slice and string of its own, as a
// fresh evaluation allocates them.
func cloneDecision(d *Decision) *Decision {
	out := *d
	clone := func(vs []Violation) []Violation {
		if vs == nil {
			return nil
		}
		out := make([]Violation, len(vs))
		for i, v := range vs {
			c := strings.Clone
			v.Rule, v.Message, v.Action = c(v.Rule), c(v.Message), Verdict(c(string(v.Action)))
			v.Container, v.ContainerKind, v.Volume, v.Path, v.Pipe = c(v.Container), c(v.ContainerKind), c(v.Volume), c(v.Path), c(v.Pipe)
			v.Subject, v.Target, v.Reason, v.Remedy = c(v.Subject), c(v.Target), c(v.Reason), c(v.Remedy)
			v.Policies = slices.Clone(v.Policies)
			for j := range v.Policies {
				v.Policies[j] = c(v.Policies[j])
			}
			out[i] = v
		}
		return out
	}
	out.Deny, out.Warn, out.DryRun = clone(d.Deny), clone(d.Warn), clone(d.DryRun)
	return &out
}

// largeInput is the input of a pod whose facts make a key of nearly
// maxKeyLen bytes, told apart from others by id.
func largeInput(id int) *Input {
	in := cacheTestInput("team-a")
	in.Pod.ServiceAccountName = "sa-" + strconv.Itoa(id)
	path := `\\.\pipe\` + strings.Repeat("p", maxKeyLen/2-200)
	in.Mounts[0].RawPath, in.Mounts[0].Path = path, path
	return in
}

// largeDecision is a decision with many violations and long messages, as
// a pod with many protected mounts gets, every string its own.
func largeDecision(id int) *Decision {
	d := &Decision{Generation: int64(id), Evaluated: true}
	for i := range 40 {
		d.Deny = append(d.Deny, Violation{
			Rule: "pipe-access", Action: Deny,
			Message:   fmt.Sprintf("container %q mounts %s; %s", "c"+strconv.Itoa(i), strings.Repeat("m", 1500), strconv.Itoa(id)),
			Container: "c" + strconv.Itoa(i), ContainerKind: KindContainer, Volume: "v" + strconv.Itoa(i),
			Path: `\\.\pipe\` + strings.Repeat("x", 300), Pipe: strings.Repeat("x", 300),
			Policies: []string{strings.Clone("csi-proxy"), strings.Clone("vendor")},
			Subject:  strings.Repeat("s", 100), Target: strings.Repeat("t", 300), Reason: strings.Repeat("r", 200), Remedy: strings.Repeat("y", 200),
		})
	}
	return d
}

// storeNew looks in up, which must be absent, and stores d for it.
func storeNew(t testing.TB, c *decisionCache, in *Input, d *Decision) {
	t.Helper()
	got, slot := c.lookup(in, nil)
	if got != nil || slot.key == "" {
		t.Fatalf("lookup before store gave %+v, slot key of %d bytes; want no decision and a key", got, len(slot.key))
	}
	c.store(slot, d)
}

// held counts the map entries of both halves.
func (c *decisionCache) held() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.new) + len(c.old)
}

// Large decisions under 16 KiB keys never take the cache past its bound:
// not by its own accounting after any store, and not by the heap, measured
// around the fill.
func TestDecisionCacheBytesBound(t *testing.T) {
	const bound = 8 << 20
	if size := entryBytes(largeInput(0).Mounts[0].Path+strings.Repeat("k", 300), decisionBytes(largeDecision(0))); size < 64<<10 {
		t.Fatalf("a large entry is estimated at %d bytes; the fill below needs entries of 64 KiB or more", size)
	}

	var before, after runtime.MemStats
	runtime.GC()
	runtime.GC()
	runtime.ReadMemStats(&before)
	// No entry cap: the bytes alone bound the cache.
	c := newBoundedDecisionCache(0, bound)
	// Fill until many halves have been dropped and the cache is nearly
	// full, so the heap is measured where the bound matters.
	for id := 0; id < 200 || c.heldBytes() < bound*85/100; id++ {
		if id == 2000 {
			t.Fatalf("2000 large entries never filled the cache to 85%% of its bound: it holds %d bytes", c.heldBytes())
		}
		storeNew(t, c, largeInput(id), largeDecision(id))
		if held := c.heldBytes(); held > bound {
			t.Fatalf("after %d stores the cache holds %d bytes, more than its bound of %d", id+1, held, bound)
		}
	}
	runtime.GC()
	runtime.GC()
	runtime.ReadMemStats(&after)
	held, entries := c.heldBytes(), c.held()
	runtime.KeepAlive(c)

	heap := int64(after.HeapAlloc) - int64(before.HeapAlloc)
	t.Logf("%d entries, %d bytes by the cache's estimate, %d bytes of heap (bound %d)", entries, held, heap, bound)
	if heap > bound*3/2 {
		t.Errorf("the cache's heap is %d bytes, more than 1.5 times its bound of %d (its own estimate: %d)", heap, bound, held)
	}
	// The estimate must be close to the heap: far under it, the bound
	// would not hold for other shapes of decision; far over it, it would
	// starve the cache.
	if heap > held*5/4 {
		t.Errorf("the cache's heap is %d bytes, more than 1.25 times its estimate of %d: the estimate is too low", heap, held)
	}
	if heap < held/2 {
		t.Errorf("the cache's heap is %d bytes, less than half its estimate of %d: the estimate is too high", heap, held)
	}
}

// Decisions of ordinary pod templates, as the shipped rules write them,
// take a few kilobytes each: the default bytes bound holds the default
// number of them, even denied with a message per mount, twice over.
func TestDecisionCacheBytesKeepsOrdinaryDecisions(t *testing.T) {
	e, err := NewEngine(context.Background(), Options{DecisionCacheSize: 16})
	if err != nil {
		t.Fatal(err)
	}
	// A CSI node plugin's DaemonSet in a namespace without an allowance:
	// four pipe mounts, four denials with messages.
	in := cacheTestInput("team-a")
	for _, pipe := range []string{"csi-proxy-filesystem-v1", "csi-proxy-volume-v1", "csi-proxy-system-v1alpha1"} {
		m := in.Mounts[0]
		m.Volume, m.RawPath, m.Path, m.Pipe = pipe, `\\.\pipe\`+pipe, `\\.\pipe\`+pipe, pipe
		in.Mounts = append(in.Mounts, m)
	}
	d := evaluate(t, e, in)
	if len(d.Deny) != 4 {
		t.Fatalf("the DaemonSet's pod got %d denials, want 4: %+v", len(d.Deny), d.Deny)
	}
	key := string(decisionKey(nil, in, e.Current().namespaceMatches(in.Namespace), true))
	size := entryBytes(key, decisionBytes(d))
	t.Logf("a denied DaemonSet's entry: %d bytes of key, %d bytes in all", len(key), size)
	if size > 6<<10 {
		t.Errorf("a denied DaemonSet's entry is estimated at %d bytes, want at most 6 KiB", size)
	}

	allowed := cacheTestInput("team-a")
	allowed.Mounts = slices.Clone(in.Mounts)
	for i := range allowed.Mounts {
		allowed.Mounts[i].HostProcess = true
	}
	if d := evaluate(t, e, allowed); d.Verdict() != Allow {
		t.Fatalf("the HostProcess DaemonSet's pod got %+v, want an allow", d)
	}
	key = string(decisionKey(nil, allowed, e.Current().namespaceMatches(allowed.Namespace), true))
	if size := entryBytes(key, decisionBytes(evaluate(t, e, allowed))); size > 1<<10 {
		t.Errorf("an allowed DaemonSet's entry is estimated at %d bytes, want at most 1 KiB", size)
	}

	allowedDecision := evaluate(t, e, allowed)
	for name, c := range map[string]struct {
		decision *Decision
		// fill decisions are stored, of which the cache must hold at
		// least atLeast, within the default bound.
		fill, atLeast int
	}{
		// The default number of allowed DaemonSets' decisions fits the
		// default bound.
		"allowed": {allowedDecision, 1024, 1024},
		"denied":  {d, 1024, 110},
	} {
		t.Run(name, func(t *testing.T) {
			cache := newBoundedDecisionCache(1024, DefaultDecisionCacheBytes)
			for i := range c.fill {
				in := cacheTestInput("team-a")
				in.Mounts = slices.Clone(in.Mounts)
				in.Pod.ServiceAccountName = "sa-" + strconv.Itoa(i)
				storeNew(t, cache, in, cloneDecision(c.decision))
			}
			if n := cache.held(); n < c.atLeast || cache.heldBytes() > DefaultDecisionCacheBytes {
				t.Errorf("the cache holds %d of %d decisions in %d bytes; want at least %d within %d bytes", n, c.fill, cache.heldBytes(), c.atLeast, DefaultDecisionCacheBytes)
			}
		})
	}
}

// An entry bigger than half the bound is not remembered, and storing it
// evicts nothing.
func TestDecisionCacheSkipsEntryBiggerThanHalf(t *testing.T) {
	const bound = 256 << 10
	c := newBoundedDecisionCache(1024, bound)
	small := func(i int) *Input {
		in := cacheTestInput("team-a")
		in.Pod.ServiceAccountName = "small-" + strconv.Itoa(i)
		return in
	}
	for i := range 3 {
		storeNew(t, c, small(i), &Decision{Generation: int64(i)})
	}
	held := c.heldBytes()

	big := largeDecision(7)
	if size := decisionBytes(big); size <= bound/2 {
		t.Fatalf("the big decision is estimated at %d bytes, want more than half the bound, %d", size, bound/2)
	}
	got := func() *Decision {
		_, slot := c.lookup(largeInput(7), nil)
		return c.store(slot, big)
	}()
	if got.Generation != 7 || len(got.Deny) != 40 {
		t.Errorf("storing the big decision returned %d denials of generation %d, want it back", len(got.Deny), got.Generation)
	}
	if d, _ := c.lookup(largeInput(7), nil); d != nil {
		t.Error("a decision bigger than half the cache was remembered")
	}
	if n, b := c.held(), c.heldBytes(); n != 3 || b != held {
		t.Errorf("after the big decision the cache holds %d entries of %d bytes, want the 3 small ones of %d bytes", n, b, held)
	}
	for i := range 3 {
		if d, _ := c.lookup(small(i), nil); d == nil || d.Generation != int64(i) {
			t.Errorf("small entry %d: got %+v after the big decision, want its decision", i, d)
		}
	}
}

// Entries move to the newer half on a hit without being counted anew
// from scratch: the cache keeps its bound however the hits fall.
func TestDecisionCacheBytesWithHits(t *testing.T) {
	const bound = 1 << 20
	c := newBoundedDecisionCache(0, bound)
	for round := range 4 {
		for id := range 40 {
			d, slot := c.lookup(largeInput(id), nil)
			if d == nil {
				c.store(slot, largeDecision(id))
			} else if d.Generation != int64(id) || !d.Cached {
				t.Fatalf("round %d, entry %d: got the decision of %d (cached %v)", round, id, d.Generation, d.Cached)
			}
			if held := c.heldBytes(); held > bound {
				t.Fatalf("round %d, entry %d: the cache holds %d bytes, more than its bound of %d", round, id, held, bound)
			}
		}
	}
}

// A zero bytes bound remembers nothing; a negative one is refused.
func TestDecisionCacheBytesOptions(t *testing.T) {
	c := newBoundedDecisionCache(1024, 0)
	_, slot := c.lookup(cacheTestInput("team-a"), nil)
	c.store(slot, &Decision{})
	if d, _ := c.lookup(cacheTestInput("team-a"), nil); d != nil || c.held() != 0 {
		t.Errorf("a cache bound to 0 bytes remembered a decision")
	}

	_, err := NewEngine(context.Background(), Options{DecisionCacheSize: 16, DecisionCacheBytes: -1})
	want := "policy options: DecisionCacheBytes is -1; want 0 for the default (1048576) or a number of bytes"
	if err == nil || err.Error() != want {
		t.Errorf("NewEngine with DecisionCacheBytes -1: error %v, want %q", err, want)
	}

	e, err := NewEngine(context.Background(), Options{DecisionCacheSize: 16})
	if err != nil {
		t.Fatal(err)
	}
	if c := e.Current().cache; c.halfBytes != DefaultDecisionCacheBytes/2 || c.halfEntries != 8 {
		t.Errorf("an engine with no DecisionCacheBytes has halves of %d bytes and %d entries, want %d and 8", c.halfBytes, c.halfEntries, DefaultDecisionCacheBytes/2)
	}
	e, err = NewEngine(context.Background(), Options{DecisionCacheSize: 16, DecisionCacheBytes: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	first := evaluate(t, e, cacheTestInput("team-a"))
	again := evaluate(t, e, cacheTestInput("team-b"))
	if !again.Cached || len(again.Deny) != len(first.Deny) || !strings.Contains(again.Deny[0].Message, `namespace "team-b"`) {
		t.Errorf("an engine bound to 1 MiB: second review %+v, want the first one's decision for team-b", again)
	}
	if off, err := NewEngine(context.Background(), Options{DecisionCacheBytes: 1 << 20}); err != nil || off.Current().cache != nil {
		t.Errorf("an engine with DecisionCacheSize 0 has cache %v (%v), want none", off.Current().cache, err)
	}
}

// A decision's bytes count its slices and strings, each once however many
// violations share it.
func TestDecisionBytes(t *testing.T) {
	msg := strings.Repeat("m", 1000)
	shared := &Decision{Deny: make([]Violation, 10)}
	for i := range shared.Deny {
		shared.Deny[i].Message = msg
	}
	want := allocBytes(int(unsafe.Sizeof(Decision{}))) + allocBytes(10*int(unsafe.Sizeof(Violation{}))) + allocBytes(1000)
	if got := decisionBytes(shared); got != want {
		t.Errorf("10 violations sharing one message: %d bytes, want %d", got, want)
	}
	own := cloneDecision(shared)
	if got, want := decisionBytes(own), want+9*allocBytes(1000); got != want {
		t.Errorf("10 violations with a message each: %d bytes, want %d", got, want)
	}
	own.Warn, own.DryRun = own.Deny, own.Deny[:5]
	if got, want := decisionBytes(own), want+9*allocBytes(1000); got != want {
		t.Errorf("deny, warn and dryrun sharing one array: %d bytes, want %d as for deny alone", got, want)
	}
	if got := entryBytes("key", decisionBytes(&Decision{})); got != entryOverhead+16+allocBytes(int(unsafe.Sizeof(Decision{}))) {
		t.Errorf("an empty decision under a 3-byte key: %d bytes", got)
	}
}

func TestAllocBytes(t *testing.T) {
	for n, want := range map[int]int64{0: 0, 1: 16, 16: 16, 17: 32, 100: 112, 1000: 1136, 32 << 10: 36864, 32<<10 + 1: 40 << 10, 100000: 106496} {
		if got := allocBytes(n); got != want {
			t.Errorf("allocBytes(%d) = %d, want %d", n, got, want)
		}
	}
}

// Concurrent lookups and stores of decisions of every size keep the bound
// and give each key its own decision.
func TestDecisionCacheBytesConcurrent(t *testing.T) {
	const bound = 2 << 20
	c := newBoundedDecisionCache(64, bound)
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 200 {
				id := (i*7 + g) % 50
				in := largeInput(id)
				if id%2 == 0 {
					in = cacheTestInput("team-a")
					in.Pod.ServiceAccountName = "sa-" + strconv.Itoa(id)
				}
				d, slot := c.lookup(in, nil)
				if d == nil {
					dec := &Decision{Generation: int64(id)}
					if id%2 == 1 {
						dec = largeDecision(id)
					}
					d = c.store(slot, dec)
				}
				if d.Generation != int64(id) {
					errs <- fmt.Errorf("entry %d got the decision of %d", id, d.Generation)
					return
				}
				if held := c.heldBytes(); held > bound {
					errs <- fmt.Errorf("the cache holds %d bytes, more than its bound of %d", held, bound)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}
