package audit

import (
	"sync"
	"testing"

	"github.com/google/uuid"
)

// TestIDsUniqueConcurrently hands out IDs from many goroutines of two ID
// sources (two agent starts) and finds no duplicate, every ID a valid
// version 8 UUID in the RFC 9562 variant.
func TestIDsUniqueConcurrently(t *testing.T) {
	const goroutines, each = 32, 2000
	srcs := []*IDs{mustIDs(t), mustIDs(t)}
	var mu sync.Mutex
	seen := make(map[string]int, 2*goroutines*each)
	var wg sync.WaitGroup
	for g := range goroutines {
		for si, s := range srcs {
			wg.Go(func() {
				ids := make([]string, each)
				for i := range ids {
					ids[i] = s.New()
				}
				mu.Lock()
				defer mu.Unlock()
				for _, id := range ids {
					if prev, dup := seen[id]; dup {
						t.Errorf("ID %s handed out twice (sources %d and %d, goroutine %d)", id, prev, si, g)
					}
					seen[id] = si
				}
			})
		}
	}
	wg.Wait()
	if len(seen) != 2*goroutines*each {
		t.Fatalf("%d distinct IDs, want %d", len(seen), 2*goroutines*each)
	}
	for id := range seen {
		checkIDShape(t, id)
	}
}

// TestIDsPrefixPerStart checks that each source draws its own random
// prefix: a new agent start does not continue a predictable sequence.
func TestIDsPrefixPerStart(t *testing.T) {
	prefixes := map[string]bool{}
	for range 64 {
		id := mustIDs(t).New()
		p := id[:18] // the 64 bits drawn once per source
		if prefixes[p] {
			t.Fatalf("prefix %s drawn twice in 64 starts", p)
		}
		prefixes[p] = true
	}
}

// TestIDsWrapAround checks the counter at the edges of its 62 bits: the
// variant and version bits stay, and no bit of the counter leaks into them.
func TestIDsWrapAround(t *testing.T) {
	var b [16]byte
	for i := range b {
		b[i] = 0xff
	}
	s := newIDs(b)
	first := s.New()
	second := s.New()
	if first == second {
		t.Fatalf("two IDs alike: %s", first)
	}
	checkIDShape(t, first)
	checkIDShape(t, second)
	if first != "ffffffff-ffff-8fff-8000-000000000000" || second != "ffffffff-ffff-8fff-8000-000000000001" {
		t.Fatalf("IDs across the counter's wrap: %s, %s", first, second)
	}
}

// TestLogAuditIDs checks that checkpoint records and request IDs of a Log
// come from the same source and the log still verifies.
func TestLogAuditIDs(t *testing.T) {
	dir := t.TempDir()
	l := openLog(t, Options{Path: dir + "/audit.log"})
	defer l.Close()
	a, b := l.NewAuditID(), l.NewAuditID()
	if a == b || a[:18] != b[:18] {
		t.Fatalf("IDs of one log: %s, %s", a, b)
	}
	checkIDShape(t, a)
}

func mustIDs(t testing.TB) *IDs {
	t.Helper()
	s, err := NewIDs()
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func checkIDShape(t testing.TB, id string) {
	t.Helper()
	u, err := uuid.Parse(id)
	if err != nil || u.String() != id {
		t.Fatalf("audit ID %q is not a lowercase UUID: %v", id, err)
	}
	if u.Version() != 8 || u.Variant() != uuid.RFC4122 {
		t.Fatalf("audit ID %s: version %d, variant %v; want version 8, RFC 9562 variant", id, u.Version(), u.Variant())
	}
}

func BenchmarkAuditID(b *testing.B) {
	b.Run("IDs", func(b *testing.B) {
		s := mustIDs(b)
		b.ReportAllocs()
		for b.Loop() {
			_ = s.New()
		}
	})
	b.Run("uuid.NewString", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			_ = uuid.NewString()
		}
	})
	b.Run("IDs/parallel", func(b *testing.B) {
		s := mustIDs(b)
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				_ = s.New()
			}
		})
	})
	b.Run("uuid.NewString/parallel", func(b *testing.B) {
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				_ = uuid.NewString()
			}
		})
	})
}
