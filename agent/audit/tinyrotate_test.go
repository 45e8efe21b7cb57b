package audit

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

// TestMaxSizeBelowACheckpoint: a MaxSize smaller than the checkpoints a
// rotation writes, with old files pruned, still rotates once per record
// that does not fit, instead of rotating and pruning each other for ever
// (which hung Append), and keeps MaxBackups files.
func TestMaxSizeBelowACheckpoint(t *testing.T) {
	for _, size := range []int64{1, 200, 800} {
		path := filepath.Join(t.TempDir(), "audit.log")
		l, err := Open(Options{Path: path, MaxSize: size, MaxBackups: 1})
		if err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 1)
		go func() {
			for range 20 {
				if err := l.Append(&Event{Kind: Kind, APIVersion: APIVersion, Level: LevelMetadata, Verb: "Mkdir", Stage: StageResponseComplete}, false); err != nil {
					done <- err
					return
				}
			}
			done <- l.Close()
		}()
		select {
		case err := <-done:
			if err != nil {
				t.Fatalf("MaxSize %d: %v", size, err)
			}
		case <-time.After(30 * time.Second):
			t.Fatalf("MaxSize %d: 20 appends did not finish in 30 s", size)
		}
		backups, err := Backups(path)
		if err != nil {
			t.Fatal(err)
		}
		if len(backups) != 1 {
			t.Errorf("MaxSize %d: %d rotated files kept, want MaxBackups 1: %v", size, len(backups), backups)
		}
		for _, f := range append(backups, path) {
			st, err := os.Stat(f)
			if err != nil {
				t.Fatal(err)
			}
			// A record and the checkpoints of one rotation at most.
			if st.Size() > 8<<10 {
				t.Errorf("MaxSize %d: %s holds %d bytes", size, f, st.Size())
			}
		}
	}
}
