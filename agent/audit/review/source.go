package review

import (
	"errors"
	"io"
	"os"

	"github.com/pipeguard/pipeguard/agent/audit"
)

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
func (s Source) each(fn func(audit.Record) error) error {
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

// name names the source in findings about it as a whole.
func (s Source) name() string {
	if s.Reader != nil {
		return s.Name
	}
	if len(s.Paths) > 0 {
		return s.Paths[len(s.Paths)-1]
	}
	return "audit log"
}

// errStop ends a scan early without an error.
var errStop = errors.New("stop")

// scan is audit.Scan, ended early without an error by errStop.
func scan(r io.Reader, name string, fn func(audit.Record) error) error {
	if err := audit.Scan(r, name, fn); err != errStop {
		return err
	}
	return nil
}
