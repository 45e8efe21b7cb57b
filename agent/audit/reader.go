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

// Record is one line of an audit file.
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

// errStop ends a scan early without an error.
var errStop = errors.New("stop")

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
		rec := Record{File: name, Line: line}
		if err == io.EOF {
			rec.Torn = true
			rec.Raw = raw
		} else {
			rec.Raw = raw[:len(raw)-1]
		}
		parse(&rec)
		if ferr := fn(rec); ferr != nil {
			if ferr == errStop {
				return nil
			}
			return ferr
		}
		if err == io.EOF {
			return nil
		}
	}
}

func parse(rec *Record) {
	if len(bytes.TrimSpace(rec.Raw)) == 0 {
		rec.Err = errors.New("empty line")
		return
	}
	if err := json.Unmarshal(rec.Raw, &rec.Event); err != nil {
		rec.Err = fmt.Errorf("not a JSON audit record (%w)", err)
		return
	}
	if rec.Event.Kind != Kind || rec.Event.APIVersion != APIVersion {
		rec.Err = fmt.Errorf("not an %s %s (kind %q, apiVersion %q)", APIVersion, Kind, rec.Event.Kind, rec.Event.APIVersion)
		return
	}
	seq, prev, err := chainFields(&rec.Event)
	if err != nil {
		rec.Err = err
		return
	}
	rec.Seq, rec.Prev = seq, prev
}

// scanFile scans one file.
func scanFile(path string, fn func(Record) error) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	return Scan(f, path, fn)
}

// Source is where records are read from: the files of a log, or a stream.
type Source struct {
	// Paths are files, read in order; ignored when Reader is set.
	Paths []string
	// Reader is a stream, e.g. standard input, named Name.
	Reader io.Reader
	Name   string
}

// each calls fn for every record of the source, file after file. A file
// or stream holds JSON lines of records, or the EventLists that the
// webhook backend sends, as a receiver saved them.
func (s Source) each(fn func(Record) error) error {
	if s.Reader != nil {
		return scanAny(s.Reader, s.Name, fn)
	}
	for _, p := range s.Paths {
		f, err := os.Open(p)
		if err != nil {
			return err
		}
		err = scanAny(f, p, fn)
		f.Close()
		if err != nil {
			return err
		}
	}
	return nil
}
