package inflight

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
)

// race starts n Begins of key at once and returns how many got the key
// (their tokens not ended) and the refusals.
func race(t *testing.T, tab *Table, key Key, n int) (int, []error) {
	t.Helper()
	var (
		wg      sync.WaitGroup
		mu      sync.Mutex
		got     atomic.Int32
		refusal []error
		ready   = make(chan struct{})
	)
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-ready
			_, err := tab.Begin(context.Background(), key, "FormatVolume")
			if err == nil {
				got.Add(1)
				return
			}
			mu.Lock()
			refusal = append(refusal, err)
			mu.Unlock()
		}()
	}
	close(ready)
	wg.Wait()
	return int(got.Load()), refusal
}

// Concurrent Begins of one key never let two through, on a free key and
// on one whose settle check says done; checks never run two at once; and
// every other request gets the refusal.
func TestConcurrentBeginsLetOneThrough(t *testing.T) {
	for round := range 20 {
		tab := newTestTable(t)
		if n, refused := race(t, tab.Table, Volume(volA), 16); n != 1 || len(refused) != 15 {
			t.Fatalf("round %d, free key: %d got it, %d refused; want 1 and 15", round, n, len(refused))
		}
		tab = newTestTable(t)
		a := newAnswers()
		for range 16 {
			a.answer <- true
		}
		mustBegin(t, tab.Table, Volume(volA), "FormatVolume").Abandon(a.check)
		n, refused := race(t, tab.Table, Volume(volA), 16)
		if n != 1 || len(refused) != 15 {
			t.Fatalf("round %d, settled key: %d got it, %d refused; want 1 and 15", round, n, len(refused))
		}
		for _, err := range refused {
			var busy *BusyError
			if !errors.As(err, &busy) || codeOf(err) != "Aborted" {
				t.Fatalf("round %d: refused with %v, want a BusyError", round, err)
			}
		}
		if a.most > 1 {
			t.Fatalf("round %d: %d checks ran at once for one key", round, a.most)
		}
	}
}

// Keys are apart: concurrent operations on different volumes all run.
func TestDifferentKeysNeverBlock(t *testing.T) {
	tab := newTestTable(t)
	never := func(context.Context) (bool, error) { return false, nil }
	mustBegin(t, tab.Table, Volume(volA), "FormatVolume").Abandon(never)
	mustBegin(t, tab.Table, Disk(1), "PartitionDisk")
	var wg sync.WaitGroup
	errs := make(chan error, 64)
	for i := range 64 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			tok, err := tab.Begin(context.Background(), Disk(uint32(i+2)), "PartitionDisk")
			if err != nil {
				errs <- err
				return
			}
			tok.Done()
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
}
