package audit

import (
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
)

// gatedFile is a real file whose Sync, once armed, waits until released.
type gatedFile struct {
	*os.File
	syncs   atomic.Int64
	armed   atomic.Bool
	entered chan struct{}
	release chan struct{}
}

func (f *gatedFile) Sync() error {
	f.syncs.Add(1)
	if f.armed.CompareAndSwap(true, false) {
		f.entered <- struct{}{}
		<-f.release
	}
	return f.File.Sync()
}

// TestDurableAppendsShareFsync holds one fsync while more durable records
// are written: when it ends, every one of them is covered by a single
// further fsync, and all of them return only after it.
func TestDurableAppendsShareFsync(t *testing.T) {
	gf := &gatedFile{entered: make(chan struct{}), release: make(chan struct{})}
	l := openLog(t, Options{Path: filepath.Join(t.TempDir(), "audit.log"), OpenFile: func(p string) (File, error) {
		f, err := openAppend(p)
		if err != nil {
			return nil, err
		}
		gf.File = f.(*os.File)
		return gf, nil
	}})
	defer l.Close()
	gf.armed.Store(true)
	base := gf.syncs.Load()

	first := make(chan error, 1)
	go func() { first <- l.Append(request(0, DecisionAllow), true) }()
	<-gf.entered // the first record's fsync is running

	const n = 8
	var wg sync.WaitGroup
	var done atomic.Int64
	errs := make(chan error, n)
	for i := 1; i <= n; i++ {
		wg.Go(func() {
			errs <- l.Append(request(i, DecisionAllow), true)
			done.Add(1)
		})
	}
	for l.Seq() < 2+n { // the start checkpoint, the first record, n more
		waitABit()
	}
	if d := done.Load(); d != 0 {
		t.Fatalf("%d durable appends returned before any fsync covered them", d)
	}
	close(gf.release)
	if err := <-first; err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	if got := gf.syncs.Load() - base; got != 2 {
		t.Errorf("%d fsyncs for %d durable records written during one fsync, want 2 (the held one and one shared)", got, n+1)
	}
}

func waitABit() { runtime.Gosched() }

// TestConcurrentAppendsChain writes from many goroutines, durable and not,
// through several rotations: the chain verifies and holds every record.
func TestConcurrentAppendsChain(t *testing.T) {
	path := filepath.Join(t.TempDir(), "audit.log")
	l := openLog(t, Options{Path: path, MaxSize: 20 << 10, CheckpointEvery: 37})
	var wg sync.WaitGroup
	for w := range 16 {
		wg.Go(func() {
			for i := range 60 {
				if err := l.Append(request(w*1000+i, DecisionAllow), i%3 == 0); err != nil {
					t.Error(err)
				}
			}
		})
	}
	wg.Wait()
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	rep := verify(t, path)
	if !rep.OK() || rep.Last != l.Seq() || rep.Records != int(l.Seq()) {
		t.Fatalf("verify: ok=%v last=%d records=%d (want %d) problems=%v", rep.OK(), rep.Last, rep.Records, l.Seq(), rep.Problems)
	}
	if files, _ := Files(path); len(files) < 3 {
		t.Fatalf("%d files: the test should rotate several times", len(files))
	}
	// The chain continues after a restart.
	l = openLog(t, Options{Path: path, MaxSize: 20 << 10})
	write(t, l, 0, 5)
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if rep := verify(t, path); !rep.OK() {
		t.Fatalf("after restart: %v", rep.Problems)
	}
}
