package audit

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/pipeguard/pipeguard/internal/option"
)

// Pruned is what a prune checkpoint records of a rotated file the agent
// removed beyond Options.MaxBackups: the sequence numbers it held and the
// hash of its last record. Checkpoints are cumulative: once every file
// from the start of the chain was pruned, First is 1 and Last the end of
// the newest of them.
type Pruned struct {
	First, Last uint64
	Hash        Hash
	// File is the base name of the removed file; Where the checkpoint.
	File, Where string
}

// ParsePrune reads the prune checkpoint r.
func ParsePrune(r Record) (Pruned, error) {
	a := r.Event.Annotations
	lo, hi, ok := strings.Cut(a[AnnotationPrunedSeqs], "-")
	first, err1 := strconv.ParseUint(lo, 10, 64)
	last, err2 := strconv.ParseUint(hi, 10, 64)
	h, err3 := ParseHash(a[AnnotationPrunedHash])
	if !ok || err1 != nil || err2 != nil || err3 != nil || first == 0 || last < first {
		return Pruned{}, fmt.Errorf("prune checkpoint has an unreadable %s %q or %s", AnnotationPrunedSeqs, a[AnnotationPrunedSeqs], AnnotationPrunedHash)
	}
	return Pruned{First: first, Last: last, Hash: h, Where: r.Where(), File: a[AnnotationPrunedFile]}, nil
}

// DefaultMaxUnsentBytes bounds the rotated files beyond MaxBackups that
// pruning keeps for Options.Unsent: 1 GiB, about the log's default size.
const DefaultMaxUnsentBytes = 1 << 30

// AnnotationPrunedUnsent, on a prune checkpoint, lists the records of the
// pruned file that Options.Unsent had not delivered ("3-7,9"): they were
// never delivered off the node, and the file held them last.
const AnnotationPrunedUnsent = "pipeguard.io/pruned-unsent"

// UnsentTracker is what carries records off the node (the webhook
// backend), asked before a rotated file is pruned.
type UnsentTracker interface {
	// Unsent lists the records from first to last not delivered yet, as
	// "3-7,9"; "" when every one was.
	Unsent(first, last uint64) string
	// Forget is told that the records up to through were pruned.
	Forget(through uint64)
}

// prune removes the oldest backups beyond MaxBackups, first writing a
// checkpoint naming each file, its sequence numbers and its last hash, so
// that verify can tell a pruned file from a deleted one. With
// Options.Unsent, the oldest file holding records not delivered yet stops
// pruning, it and the files after it kept, until those files take more
// than MaxUnsentBytes: then it is pruned all the same, its checkpoint
// lists the records never delivered (AnnotationPrunedUnsent) and an error
// is logged. l.mu is held.
func (l *Log) prune() error {
	if l.o.MaxBackups == 0 {
		return nil
	}
	backups, err := Backups(l.o.Path)
	if err != nil {
		return fmt.Errorf("listing rotated audit files: %w", err)
	}
	removed := false
	defer func() {
		if removed {
			if err := syncDir(l.o.Path); err != nil {
				l.o.Log.Error(err, "a removed rotated audit file may reappear after a power loss")
			}
		}
	}()
	for len(backups) > l.o.MaxBackups {
		old := backups[0]
		first, last, lastHash, err := fileRange(old)
		if err != nil {
			backups = backups[1:]
			l.o.Log.Error(err, "not removing a rotated audit file that cannot be read", "file", old)
			continue
		}
		var unsent string
		if l.o.Unsent != nil {
			if unsent = l.o.Unsent.Unsent(first, last); unsent != "" {
				held, limit := filesSize(backups[:len(backups)-l.o.MaxBackups]), l.o.MaxUnsentBytes
				if limit <= 0 {
					limit = DefaultMaxUnsentBytes
				}
				if held <= limit {
					return nil
				}
				l.o.Log.Error(option.Errorf("the rotated audit files kept for records not delivered off the node take %d bytes, more than the %d of %s", held, limit, maxUnsentOption),
					"removing a rotated audit file holding records never delivered to the webhook receiver: no copy of them is left; its prune checkpoint lists them",
					"file", old, "undelivered", unsent, "maxBackups", l.o.MaxBackups)
			}
		}
		backups = backups[1:]
		checkFirst := first
		// Prune checkpoints are cumulative, so the newest one accounts for
		// every file removed before, even once those checkpoints are pruned.
		if first == 1 || l.prunedThrough == first-1 {
			checkFirst = 1
			l.prunedThrough = last
		}
		annotations := map[string]string{
			AnnotationCheckpoint: "prune",
			AnnotationPrunedFile: filepath.Base(old),
			AnnotationPrunedSeqs: fmt.Sprintf("%d-%d", checkFirst, last),
			AnnotationPrunedHash: lastHash.String(),
		}
		if unsent != "" {
			annotations[AnnotationPrunedUnsent] = unsent
		}
		if _, err := l.checkpoint(annotations); err != nil {
			return err
		}
		if err := os.Remove(old); err != nil {
			l.o.Log.Error(err, "removing a rotated audit file beyond the backups kept", "file", old, "maxBackups", l.o.MaxBackups)
		} else {
			removed = true
			if l.o.Unsent != nil {
				l.o.Unsent.Forget(last)
			}
		}
	}
	return nil
}

// maxUnsentOption is Options.MaxUnsentBytes as messages name it.
var maxUnsentOption = option.Name{Key: OptionMaxUnsentBytes, Field: "Options.MaxUnsentBytes"}

// OptionMaxUnsentBytes is the key of Options.MaxUnsentBytes in messages.
const OptionMaxUnsentBytes = "audit.max-unsent-bytes"

// filesSize is the bytes of files; one that cannot be read counts 0.
func filesSize(files []string) int64 {
	var n int64
	for _, f := range files {
		if fi, err := os.Stat(f); err == nil {
			n += fi.Size()
		}
	}
	return n
}

// findPrunedThrough finds the newest cumulative prune checkpoint, reading
// files from the newest until one holds it.
func findPrunedThrough(path string) uint64 {
	files, err := Files(path)
	if err != nil {
		return 0
	}
	for i := len(files) - 1; i >= 0; i-- {
		var through uint64
		_ = ScanFile(files[i], func(r Record) error {
			if r.Err == nil && r.Event.Annotation(AnnotationCheckpoint) == "prune" {
				if p, err := ParsePrune(r); err == nil && p.First == 1 && p.Last > through {
					through = p.Last
				}
			}
			return nil
		})
		if through > 0 {
			return through
		}
	}
	return 0
}

// fileRange returns the first and last sequence numbers of a file and the
// hash of its last record.
func fileRange(path string) (first, last uint64, lastHash Hash, err error) {
	var prevRaw []byte
	var prevHash Hash
	err = ScanFile(path, func(r Record) error {
		if r.Err != nil {
			return r.Err
		}
		if first == 0 {
			first = r.Seq
		}
		last, prevRaw, prevHash = r.Seq, r.Raw, r.Prev
		return nil
	})
	if err == nil && first == 0 {
		err = fmt.Errorf("%s holds no records", path)
	}
	if err == nil {
		lastHash = Link(prevHash, prevRaw)
	}
	return first, last, lastHash, err
}
