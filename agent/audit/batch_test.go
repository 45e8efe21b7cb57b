package audit

import (
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// heldFile is a real file, one per open, sharing the controls of its log
// (hold).
type heldFile struct {
	*os.File
	h *hold
}

// hold controls the writes of a log's files: once armed, the next write
// waits until released; the writes numbered failFrom and up (counting
// from 1) fail after writing half their bytes (a torn write, as a full
// disk leaves).
type hold struct {
	writes   atomic.Int64
	armed    atomic.Bool
	failFrom atomic.Int64
	entered  chan struct{}
	release  chan struct{}
}

func (f *heldFile) Write(p []byte) (int, error) {
	n := f.h.writes.Add(1)
	if f.h.armed.CompareAndSwap(true, false) {
		f.h.entered <- struct{}{}
		<-f.h.release
	}
	if from := f.h.failFrom.Load(); from > 0 && n >= from {
		n, _ := f.File.Write(p[:len(p)/2])
		return n, errors.New("no space left on device")
	}
	return f.File.Write(p)
}

func openHeld(t *testing.T, o Options) (*Log, *hold) {
	t.Helper()
	h := &hold{entered: make(chan struct{}), release: make(chan struct{})}
	o.OpenFile = func(p string) (File, error) {
		f, err := openAppend(p)
		if err != nil {
			return nil, err
		}
		return &heldFile{File: f.(*os.File), h: h}, nil
	}
	return openLog(t, o), h
}

// queued waits until n appends are queued behind the one being written.
func queued(t *testing.T, l *Log, n int) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); ; runtime.Gosched() {
		l.qmu.Lock()
		got := len(l.queue)
		l.qmu.Unlock()
		if got == n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d appends queued, want %d", got, n)
		}
	}
}

// TestConcurrentAppendsShareWrites holds one write while more records are
// appended: when it ends, all of them go to the file in one write, each
// exactly once, and the chain verifies, with periodic checkpoints and
// rotations falling inside batches.
func TestConcurrentAppendsShareWrites(t *testing.T) {
	path := filepath.Join(t.TempDir(), "audit.log")
	l, hf := openHeld(t, Options{Path: path, CheckpointEvery: 5, MaxSize: 16 << 10})
	hf.armed.Store(true)
	first := make(chan error)
	go func() { first <- l.Append(request(0, DecisionAllow), false) }()
	<-hf.entered
	const waiting = 12
	errs := make(chan error, waiting)
	for i := 1; i <= waiting; i++ {
		go func() { errs <- l.Append(request(i, DecisionAllow), i%3 == 0) }()
	}
	queued(t, l, waiting)
	before := hf.writes.Load()
	close(hf.release)
	if err := <-first; err != nil {
		t.Fatal(err)
	}
	for range waiting {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	// One write for the batch, and one more for each rotation it crossed
	// (its checkpoint and the records before it).
	if n := hf.writes.Load() - before; n > 4 {
		t.Errorf("%d writes for %d queued records", n, waiting)
	}

	// Many writers at once, durable or not.
	var wg sync.WaitGroup
	for w := range 16 {
		wg.Go(func() {
			for i := range 100 {
				if err := l.Append(request(1000*(w+1)+i, DecisionAllow), i%10 == 0); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	rep := verify(t, path)
	if !rep.OK() {
		t.Fatalf("chain after concurrent batched writes: %v", rep.Problems)
	}
	seen := map[string]int{}
	files, _ := Files(path)
	for _, f := range files {
		fh, err := os.Open(f)
		if err != nil {
			t.Fatal(err)
		}
		_ = Scan(fh, f, func(r Record) error {
			if r.Err == nil && !r.Event.IsCheckpoint() {
				seen[r.Event.AuditID]++
			}
			return nil
		})
		fh.Close()
	}
	if len(seen) != 1+waiting+16*100 {
		t.Errorf("%d distinct records, want %d", len(seen), 1+waiting+16*100)
	}
	for id, n := range seen {
		if n != 1 {
			t.Errorf("record %s written %d times", id, n)
		}
	}
}

// TestFailedBatchFailsEveryRecord makes the write of a batch fail halfway:
// every append in the batch returns the error, none of their records is
// left in the file or the chain, and the log goes on afterwards with a
// chain that verifies.
func TestFailedBatchFailsEveryRecord(t *testing.T) {
	path := filepath.Join(t.TempDir(), "audit.log")
	l, hf := openHeld(t, Options{Path: path})
	hf.armed.Store(true)
	first := make(chan error)
	go func() { first <- l.Append(request(0, DecisionAllow), false) }()
	<-hf.entered
	const waiting = 8
	errs := make(chan error, waiting)
	for i := 1; i <= waiting; i++ {
		go func() { errs <- l.Append(request(i, DecisionDeny), i%2 == 0) }()
	}
	queued(t, l, waiting)
	hf.failFrom.Store(hf.writes.Load() + 1) // the write after the held one
	close(hf.release)
	if err := <-first; err != nil {
		t.Fatalf("held append: %v", err)
	}
	for range waiting {
		if err := <-errs; err == nil || !strings.Contains(err.Error(), "writing audit record to") {
			t.Fatalf("an append of the failed batch returned %v", err)
		}
	}
	if n := hf.writes.Load() - hf.failFrom.Load() + 1; n != 1 {
		t.Errorf("%d writes for the %d queued records", n, waiting)
	}
	hf.failFrom.Store(0)
	for i := 100; i < 105; i++ {
		if err := l.Append(request(i, DecisionAllow), i%2 == 0); err != nil {
			t.Fatalf("append after the failed batch: %v", err)
		}
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	rep := verify(t, path)
	if !rep.OK() {
		t.Fatalf("chain after a failed batch: %v", rep.Problems)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), `"auditID":"id-0"`) {
		t.Error("the record written before the failed batch is missing")
	}
	for i := 1; i <= waiting; i++ {
		if strings.Contains(string(b), `"auditID":"id-`+strconv.Itoa(i)+`"`) {
			t.Errorf("record id-%d of the failed batch is in the file", i)
		}
	}
	if !strings.Contains(string(b), `"auditID":"id-104"`) {
		t.Error("records after the failed batch are missing")
	}
}
