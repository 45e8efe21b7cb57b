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

// Scan reads records from r, named name in positions, and calls fn for
// each. A final line without a newline is passed with Torn set. fn's error
// stops the scan and is returned.
func Scan(r io.Reader, name string, fn func(Record) error) error {
	br := bufio.NewReaderSize(r, 64<<10)
	for line := 1; ; line++ {
		raw, err := br.ReadBytes('\n')
		if len(raw) == 0 && err == io.EOF {
			return nil
		}
		if err != nil && err != io.EOF {
			return fmt.Errorf("reading %s: %w", name, err)
		}
		torn := err == io.EOF
		if !torn {
			raw = raw[:len(raw)-1]
		}
		rec := ParseRecord(name, line, raw)
		rec.Torn = torn
		if ferr := fn(rec); ferr != nil {
			return ferr
		}
		if torn {
			return nil
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
