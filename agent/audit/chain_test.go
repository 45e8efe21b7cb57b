package audit

import (
	"fmt"
	"io"
	"os"
	"testing"
)

// chainCheck is what the writer's tests read back from a log it wrote:
// its own strict reading of the chain, independent of the verification of
// package review, which also reads logs the agent did not leave whole
// (pruned, torn, edited). A log the writer wrote and closed has none of
// that: every line is a record, the first is seq 1 after the genesis hash,
// and each follows the one before it.
type chainCheck struct {
	Records     int
	First, Last uint64
	Files       int
	Problems    []string
	prev        Hash
}

func (c *chainCheck) OK() bool { return len(c.Problems) == 0 && c.Records > 0 }

func (c *chainCheck) read(t *testing.T, name string, r io.Reader) {
	t.Helper()
	c.Files++
	err := Scan(r, name, func(rec Record) error {
		switch {
		case rec.Err != nil:
			c.Problems = append(c.Problems, fmt.Sprintf("%s: %v", rec.Where(), rec.Err))
		case rec.Torn:
			c.Problems = append(c.Problems, rec.Where()+": torn line")
		case rec.Seq != c.Last+1 || rec.Prev != c.prev:
			c.Problems = append(c.Problems, fmt.Sprintf("%s: record seq %d (prev-hash %s) does not follow record seq %d (hash %s)", rec.Where(), rec.Seq, rec.Prev.Short(), c.Last, c.prev.Short()))
		}
		if rec.Err == nil && !rec.Torn {
			if c.Records == 0 {
				c.First = rec.Seq
			}
			c.Records++
			c.Last, c.prev = rec.Seq, Link(rec.Prev, rec.Raw)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// checkChain reads the chain of one stream.
func checkChain(t *testing.T, name string, r io.Reader) *chainCheck {
	t.Helper()
	c := &chainCheck{prev: Genesis()}
	c.read(t, name, r)
	return c
}

// verify reads the chain of the log at path across its rotated files.
func verify(t *testing.T, path string) *chainCheck {
	t.Helper()
	files, err := Files(path)
	if err != nil {
		t.Fatal(err)
	}
	c := &chainCheck{prev: Genesis()}
	for _, f := range files {
		fh, err := os.Open(f)
		if err != nil {
			t.Fatal(err)
		}
		c.read(t, f, fh)
		fh.Close()
	}
	return c
}
