package audit

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/go-logr/logr"
)

// BenchmarkWriteAhead measures what a mutating call's durable write-ahead
// record costs on this file system, against the alternative of writing over
// a preallocated file. Each iteration runs every case once, interleaved,
// and the metrics are each case's median in µs (a case's mkdir is not
// timed):
//
//   - append+fsync: a 1 KiB line appended and fsynced, what Log does;
//   - prealloc+fdatasync: the same bytes written over a preallocated,
//     pre-zeroed file and fdatasynced, which changes neither the file's
//     size nor its blocks (as etcd's WAL segments are written);
//   - …/mkdir: the same, each after a mkdir on the same file system, as
//     a Mkdir call leaves the journal;
//   - Log/mkdir: a durable Append of a real record after a mkdir.
func BenchmarkWriteAhead(b *testing.B) {
	dir := b.TempDir()
	rec := make([]byte, 1024)
	for i := range rec {
		rec[i] = 'x'
	}
	rec[len(rec)-1] = '\n'
	open := func(name string, flag int) *os.File {
		f, err := os.OpenFile(filepath.Join(dir, name), flag|os.O_CREATE, 0o600)
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { f.Close() })
		return f
	}
	appended := open("appended", os.O_WRONLY|os.O_APPEND)
	const segment = 64 << 20
	prealloc := open("segment", os.O_RDWR)
	if _, err := prealloc.Write(make([]byte, segment)); err != nil {
		b.Fatal(err)
	}
	if err := prealloc.Sync(); err != nil { // the zeros are on disk before any case runs
		b.Fatal(err)
	}
	l, err := Open(Options{Path: filepath.Join(dir, "audit.log"), Log: logr.Discard()})
	if err != nil {
		b.Fatal(err)
	}
	defer l.Close()
	var off int64
	dirs := 0
	mkdir := func() {
		dirs++
		if err := os.Mkdir(filepath.Join(dir, "d"+strconv.Itoa(dirs)), 0o755); err != nil {
			b.Fatal(err)
		}
	}
	appendSync := func() error {
		_, err := appended.Write(rec)
		return errors.Join(err, appended.Sync())
	}
	preallocSync := func() error {
		_, err := prealloc.WriteAt(rec, off%segment)
		off += int64(len(rec))
		return errors.Join(err, syscall.Fdatasync(int(prealloc.Fd())))
	}
	logAppend := func() error { return l.Append(request(dirs, DecisionAllow), true) }
	cases := []struct {
		name  string
		mkdir bool
		run   func() error
	}{
		{"append+fsync", false, appendSync},
		{"prealloc+fdatasync", false, preallocSync},
		{"append+fsync/mkdir", true, appendSync},
		{"prealloc+fdatasync/mkdir", true, preallocSync},
		{"Log/mkdir", true, logAppend},
	}
	times := make([][]time.Duration, len(cases))
	for b.Loop() {
		for i, c := range cases {
			b.StopTimer()
			if c.mkdir {
				mkdir()
			}
			b.StartTimer()
			start := time.Now()
			if err := c.run(); err != nil {
				b.Fatal(err)
			}
			times[i] = append(times[i], time.Since(start))
		}
	}
	for i, c := range cases {
		slices.Sort(times[i])
		b.ReportMetric(float64(times[i][len(times[i])/2].Nanoseconds())/1e3, "µs-"+c.name)
	}
}
