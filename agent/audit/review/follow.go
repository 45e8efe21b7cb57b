package review

import (
	"bytes"
	"context"
	"errors"
	"io"
	"io/fs"
	"os"
	"time"

	"github.com/pipeguard/pipeguard/agent/audit"
)

// Follow reads the current log file at path from its start and then keeps
// reading what is appended, across rotations, until ctx ends. It checks for
// new data every poll.
func Follow(ctx context.Context, path string, poll time.Duration, fn func(audit.Record) error) error {
	var (
		f       *os.File
		name    = path // the file being read
		lastSeq uint64
		partial []byte
		line    int
		drained bool // the file was rotated and read once more to its end
		chunk   = make([]byte, 64<<10)
	)
	defer func() {
		if f != nil {
			f.Close()
		}
	}()
	wait := func() error {
		t := time.NewTimer(poll)
		defer t.Stop()
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
			return nil
		}
	}
	emit := func(raw []byte, torn bool) error {
		line++
		r := audit.ParseRecord(name, line, raw)
		r.Torn = torn
		if r.Err == nil {
			lastSeq = r.Seq
		}
		return fn(r)
	}
	for ctx.Err() == nil {
		if f == nil {
			var err error
			f, err = os.Open(name)
			if errors.Is(err, fs.ErrNotExist) {
				if err := wait(); err != nil {
					return err
				}
				continue
			}
			if err != nil {
				return err
			}
			partial, line, drained = nil, 0, false
		}
		n, err := f.Read(chunk)
		if n > 0 {
			partial = append(partial, chunk[:n]...)
			for {
				i := bytes.IndexByte(partial, '\n')
				if i < 0 {
					break
				}
				raw := append([]byte(nil), partial[:i]...)
				partial = partial[i+1:]
				if err := emit(raw, false); err != nil {
					return err
				}
			}
			continue
		}
		if err != nil && err != io.EOF {
			return err
		}
		// At the end: has the file been rotated away?
		cur, serr := os.Stat(path)
		open, ferr := f.Stat()
		if ferr == nil && (serr != nil || !os.SameFile(cur, open)) {
			if !drained {
				drained = true // read what was appended before the rename
				continue
			}
			if len(partial) > 0 {
				if err := emit(partial, true); err != nil {
					return err
				}
			}
			f.Close()
			f = nil
			// Several rotations may have happened since the last look: go
			// on with the file that holds the next record.
			name = nextFile(path, lastSeq)
			continue
		}
		if err := wait(); err != nil {
			return err
		}
	}
	return nil
}

// nextFile returns the file of the log at path whose records follow seq:
// the rotated file with the lowest first sequence number above seq, or
// the current file.
func nextFile(path string, seq uint64) string {
	files, err := audit.Files(path)
	if err != nil {
		return path
	}
	best, bestSeq := path, uint64(0)
	for _, f := range files {
		var first uint64
		_ = audit.ScanFile(f, func(r audit.Record) error {
			if r.Err == nil {
				first = r.Seq
				return errStop
			}
			return nil
		})
		if first > seq && (bestSeq == 0 || first < bestSeq) {
			best, bestSeq = f, first
		}
	}
	return best
}
