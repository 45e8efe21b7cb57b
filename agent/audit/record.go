package audit

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
)

// Record is one line of an audit file. The writer reads its own files
// back as records (Open continues the chain from the last one on disk,
// rotation records the range of every file it prunes), and package review
// builds on them.
type Record struct {
	// File and Line say where the record is (Line counts from 1).
	File string
	Line int
	// Raw is the line without its newline.
	Raw []byte
	// Event is the parsed record, valid when Err is nil.
	Event Event
	// Seq and Prev are its chain fields, valid when Err is nil.
	Seq  uint64
	Prev Hash
	// Torn is set for a final line without a newline: a write cut short.
	Torn bool
	// Err says why the line is not a valid record.
	Err error
}

// Where is "file:line".
func (r Record) Where() string { return fmt.Sprintf("%s:%d", r.File, r.Line) }

// ParseRecord parses raw, a line without its newline found at line of
// file: its Event and chain fields, or in Err why it is not a record.
func ParseRecord(file string, line int, raw []byte) Record {
	rec := Record{File: file, Line: line, Raw: raw}
	if len(bytes.TrimSpace(raw)) == 0 {
		rec.Err = errors.New("empty line")
		return rec
	}
	if err := json.Unmarshal(raw, &rec.Event); err != nil {
		rec.Err = fmt.Errorf("not a JSON audit record (%w)", err)
		return rec
	}
	if rec.Event.Kind != Kind || rec.Event.APIVersion != APIVersion {
		rec.Err = fmt.Errorf("not an %s %s (kind %q, apiVersion %q)", APIVersion, Kind, rec.Event.Kind, rec.Event.APIVersion)
		return rec
	}
	seq, prev, err := chainFields(&rec.Event)
	if err != nil {
		rec.Err = err
		return rec
	}
	rec.Seq, rec.Prev = seq, prev
	return rec
}

// MaxScanLine bounds the line Scan holds in memory: a longer line is read
// past, not kept, and passed as a record with Err set. The writer's records
// are at most MaxRecordLine; this leaves room for the larger records of
// agents that did not bound them.
const MaxScanLine = 64 << 20

// Scan reads records from r, named name in positions, and calls fn for
// each. A final line without a newline is passed with Torn set. A line
// longer than MaxScanLine is passed with Err set and without its bytes.
// fn's error stops the scan and is returned.
func Scan(r io.Reader, name string, fn func(Record) error) error {
	br := bufio.NewReaderSize(r, 64<<10)
	var raw []byte
	for line := 1; ; line++ {
		raw = raw[:0]
		var n int64
		var err error
		for {
			var chunk []byte
			chunk, err = br.ReadSlice('\n')
			n += int64(len(chunk))
			if n <= MaxScanLine+1 {
				raw = append(raw, chunk...)
			}
			if err != bufio.ErrBufferFull {
				break
			}
		}
		if n == 0 && err == io.EOF {
			return nil
		}
		if err != nil && err != io.EOF {
			return fmt.Errorf("reading %s: %w", name, err)
		}
		torn := err == io.EOF
		if !torn {
			raw = raw[:len(raw)-min(len(raw), 1)]
			n--
		}
		var rec Record
		if n > MaxScanLine {
			rec = Record{File: name, Line: line, Err: fmt.Errorf("the line is %d bytes, more than the %d bytes (MaxScanLine) verification reads of one record; pipeguard-agent writes records of at most %d bytes", n, MaxScanLine, MaxRecordLine)}
		} else {
			// Records keep their Raw: a copy, as raw is reused.
			rec = ParseRecord(name, line, bytes.Clone(raw))
		}
		rec.Torn = torn
		if ferr := fn(rec); ferr != nil {
			return ferr
		}
		if torn {
			return nil
		}
		if cap(raw) > 1<<20 {
			raw = nil
		}
	}
}

// ScanFile scans the file at path.
func ScanFile(path string, fn func(Record) error) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	return Scan(f, path, fn)
}
