package audit

// Reading the end of a log file to continue its chain. Nothing here holds
// a whole record: the file is read back in chunks, and a record larger
// than maxTailParse is checked and hashed as it is read.

import (
	"bytes"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
)

// tail is what a file ends with: its last valid record, and what follows
// it. The chain continues from the record; what follows stays at the end
// of the file, which is rotated aside.
type tail struct {
	found bool
	seq   uint64 // of the last valid record
	hash  Hash   // its hash
	size  int64
	// torn counts the bytes after the last newline: a write cut short.
	torn int64
	// skipped counts the bytes of the complete lines between the last
	// valid record and the torn bytes; why says what the last of them is.
	skipped int64
	why     string
}

// tailChunk is how much of a file is read at once looking for newlines.
const tailChunk = 64 << 10

// maxTailParse is the largest line parsed in memory; a longer one is read
// as a stream (scanChain).
const maxTailParse = 1 << 20

func readTail(path string) (tail, error) {
	f, err := os.Open(path)
	if err != nil {
		return tail{}, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return tail{}, err
	}
	t := tail{size: fi.Size()}
	buf := make([]byte, tailChunk)
	lastNL, err := lastNewline(f, t.size, buf)
	if err != nil {
		return t, err
	}
	t.torn = t.size - (lastNL + 1)
	for end := lastNL; end >= 0; {
		nl, err := lastNewline(f, end, buf)
		if err != nil {
			return t, err
		}
		start := nl + 1
		seq, h, lerr, err := checkLine(f, start, end)
		if err != nil {
			return t, err
		}
		if lerr == nil {
			t.found, t.seq, t.hash = true, seq, h
			t.skipped = lastNL - end
			return t, nil
		}
		if t.why == "" {
			t.why = CutString(fmt.Sprintf("bytes %d–%d of the file: %v", start, end, lerr), 1024)
		}
		end = nl
	}
	t.skipped = lastNL + 1
	return t, nil
}

// lastNewline returns the offset of the last '\n' before end, or -1.
func lastNewline(f *os.File, end int64, buf []byte) (int64, error) {
	for end > 0 {
		start := max(end-int64(len(buf)), 0)
		b := buf[:end-start]
		if _, err := f.ReadAt(b, start); err != nil && !errors.Is(err, io.EOF) {
			return 0, err
		}
		if i := bytes.LastIndexByte(b, '\n'); i >= 0 {
			return start + int64(i), nil
		}
		end = start
	}
	return -1, nil
}

// checkLine returns the chain fields and hash of the record on bytes
// [start, end) of f, or in invalid why it is not one; err is a read error.
func checkLine(f *os.File, start, end int64) (seq uint64, h Hash, invalid, err error) {
	n := end - start
	if n <= maxTailParse {
		raw := make([]byte, n)
		if _, err := f.ReadAt(raw, start); err != nil && !errors.Is(err, io.EOF) {
			return 0, Hash{}, nil, err
		}
		rec := ParseRecord(f.Name(), 0, raw)
		if rec.Err != nil {
			return 0, Hash{}, rec.Err, nil
		}
		return rec.Seq, Link(rec.Prev, raw), nil, nil
	}
	seq, prev, invalid := scanChain(io.NewSectionReader(f, start, n))
	if invalid != nil {
		return 0, Hash{}, invalid, nil
	}
	d := sha256.New()
	d.Write(prev[:])
	if _, err := io.Copy(d, io.NewSectionReader(f, start, n)); err != nil {
		return 0, Hash{}, nil, err
	}
	d.Sum(h[:0])
	return seq, h, nil, nil
}

// odd says what the file ends with after its last valid record.
func (t tail) odd() string {
	switch {
	case t.torn > 0 && t.skipped > 0:
		return fmt.Sprintf("%d bytes that are not valid records and a torn record of %d bytes", t.skipped, t.torn)
	case t.skipped > 0:
		return fmt.Sprintf("%d bytes that are not valid records", t.skipped)
	}
	return fmt.Sprintf("a torn record of %d bytes", t.torn)
}

// annotate says in the start checkpoint's annotations what file ended with
// what, after its last valid record.
func (t tail) annotate(a map[string]string, file string) {
	a[AnnotationPreviousFile] = file
	if t.torn > 0 {
		a[AnnotationTornBytes] = strconv.FormatInt(t.torn, 10)
	}
	if t.skipped > 0 {
		a[AnnotationSkippedFile] = file
		a[AnnotationSkippedBytes] = strconv.FormatInt(t.skipped, 10)
		after := "before any valid record"
		if t.found {
			after = "after record seq " + strconv.FormatUint(t.seq, 10)
		}
		a[AnnotationSkipped] = after + "; the last of them at " + t.why
	}
}
