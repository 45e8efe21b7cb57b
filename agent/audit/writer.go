package audit

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-logr/logr"

	"github.com/pipeguard/pipeguard/internal/option"
)

// MaxRecordBytes bounds one record. A Request-level record whose body would
// exceed it is written without the body, with AnnotationTruncated.
const MaxRecordBytes = 256 << 10

// DefaultCheckpointEvery is how many records pass between periodic
// checkpoints.
const DefaultCheckpointEvery = 1000

// File is what the log writes to; *os.File is the real one.
type File interface {
	Write(p []byte) (int, error)
	Sync() error
	Truncate(size int64) error
	Close() error
}

// Options configures a Log.
type Options struct {
	// Path is the current log file; rotated files go beside it.
	Path string
	// MaxSize rotates the file before a record would take it past this many
	// bytes; 0 never rotates. A file holds at least one record, and the
	// checkpoints a rotation writes into the new file (rotate, prune)
	// never start another, so a MaxSize below their size is exceeded by
	// them rather than rotated for ever.
	MaxSize int64
	// MaxBackups removes the oldest rotated files beyond this many, after
	// recording what was removed; 0 keeps every file.
	MaxBackups int
	// CheckpointEvery writes a checkpoint after this many records; 0 means
	// DefaultCheckpointEvery.
	CheckpointEvery int
	// Log receives rotation and recovery messages.
	Log logr.Logger
	// OpenFile opens the current file for appending; nil means the real
	// file system. Tests inject failing files.
	OpenFile func(path string) (File, error)
	// Now is the clock; nil means time.Now.
	Now func() time.Time
	// OnHead, when set, is called after a rotation and its pruning, with
	// the log's lock held: it must not block or call the Log (an anchor
	// publisher signals itself and reads Head later).
	OnHead func()
	// OnRecord, when set, is called with every record written, in chain
	// order, with the log's lock held: line (newline included) is reused
	// once it returns, so it must copy it, and it must not block (the
	// webhook backend queues it).
	OnRecord func(seq uint64, line []byte)
	// Admit, when set, is asked whether the request of each record that
	// Append is given may go on, with the log's lock held (so it must not
	// block) and ahead, the records written before it that OnRecord has
	// not seen yet. An error refuses the request: in place of the record
	// the log writes the request's denial (rule RuleAuditUnavailable, the
	// error as its reason), and Append returns the error. The webhook
	// backend's blocking mode uses it.
	Admit func(ev *Event, ahead int) error
	// Unsent, when set, holds back the pruning of the rotated files that
	// hold records it has not delivered (the webhook backend's), until
	// the files beyond MaxBackups take more than MaxUnsentBytes (0:
	// DefaultMaxUnsentBytes); see UnsentTracker.
	Unsent         UnsentTracker
	MaxUnsentBytes int64
}

// RuleAuditUnavailable is the rule of a request refused because its record
// could not be taken (see Options.Admit), as the guard names audit
// failures.
const RuleAuditUnavailable = "audit-unavailable"

// Keys of the options this package's messages name (see package option):
// a command that shows the messages names these options its own way.
const (
	OptionPath       = "audit.path"
	OptionMaxBackups = "audit.max-backups"
)

// pathOption is Options.Path as messages name it.
var pathOption = option.Name{Key: OptionPath, Field: "Options.Path"}

// Log appends chained records to the audit file. It is safe for concurrent
// use.
type Log struct {
	o Options

	mu      sync.Mutex
	f       File
	size    int64
	seq     uint64 // last written
	prev    Hash   // hash of the last written record
	sinceCP int
	// prunedThrough is the last sequence number of the files removed so
	// far, when every record from 1 to it was removed by pruning.
	prunedThrough uint64
	broken        error // set when a failed write could not be undone
	closed        bool
	// rotating is set while rotate writes its own checkpoints (and the
	// prune's), which never start another rotation: with a MaxSize
	// smaller than they are, each would rotate again, for ever.
	rotating bool
	// Records staged for the next write: their lines in wbuf, and the
	// chain as it will be once they are written (stSeq, stPrev). Nothing
	// stays staged once l.mu is released.
	wbuf   []byte
	staged []staged
	stSeq  uint64
	stPrev Hash
	// Appends waiting to be written, in arrival order (qmu); spare is the
	// last batch's slice, kept for the next one (l.mu).
	qmu          sync.Mutex
	queue, spare []*pending
	syncMu       sync.Mutex
	syncDone     *sync.Cond // on syncMu, broadcast when an fsync ends
	syncing      bool       // an fsync is running; syncMu is held to read it
	synced       atomic.Uint64
	syncErrs     atomic.Uint64
	ids          *IDs
}

func openAppend(path string) (File, error) {
	return os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
}

// Open continues the chain of the log at o.Path (or starts one) and writes
// a start checkpoint. The chain continues from the last valid record on
// disk, whatever its size. When the file ends with a torn record, left by
// a crash in the middle of a write, or with lines that are not valid
// records (edited, or not written by the agent), the file is rotated so
// that those bytes stay at the end of a file, and the start checkpoint
// says what they were (AnnotationTornBytes, AnnotationSkippedBytes).
func Open(o Options) (*Log, error) {
	if o.Path == "" {
		return nil, option.Errorf("no audit log path: set %s", pathOption)
	}
	if o.Path == StdoutPath {
		return openStdout(o)
	}
	if !filepath.IsAbs(o.Path) {
		return nil, fmt.Errorf("audit log path %q is not absolute: give an absolute path such as /var/log/pipeguard/audit.log", o.Path)
	}
	if o.OpenFile == nil {
		o.OpenFile = openAppend
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.CheckpointEvery <= 0 {
		o.CheckpointEvery = DefaultCheckpointEvery
	}
	if o.MaxSize < 0 || o.MaxBackups < 0 {
		return nil, errors.New("audit log max size and max backups must not be negative")
	}
	if err := os.MkdirAll(filepath.Dir(o.Path), 0o750); err != nil {
		return nil, fmt.Errorf("creating the audit log directory: %w", err)
	}
	ids, err := NewIDs()
	if err != nil {
		return nil, err
	}
	l := &Log{o: o, prev: Genesis(), ids: ids}
	l.syncDone = sync.NewCond(&l.syncMu)
	start := map[string]string{AnnotationCheckpoint: "start"}

	t, err := readTail(o.Path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
	case err != nil:
		return nil, fmt.Errorf("reading the end of the audit log to continue its chain: %w", err)
	}
	if t.torn > 0 || t.skipped > 0 {
		// Keep what follows the last valid record where verify expects it:
		// at the end of a file.
		rotated, err := l.renameAside()
		if err != nil {
			return nil, fmt.Errorf("moving aside %s, which ends with %s: %w", o.Path, t.odd(), err)
		}
		o.Log.Info("the audit log ended with "+t.odd()+"; it was rotated and the chain continues from its last valid record", "file", rotated, "tornBytes", t.torn, "skippedBytes", t.skipped, "skipped", t.why)
		t.annotate(start, filepath.Base(rotated))
		t.size = 0
	}
	if !t.found {
		// Continue from the newest rotated file holding a valid record.
		backups, err := Backups(o.Path)
		if err != nil {
			return nil, fmt.Errorf("listing rotated audit files: %w", err)
		}
		for i := len(backups) - 1; i >= 0 && !t.found; i-- {
			if t, err = readTail(backups[i]); err != nil {
				return nil, fmt.Errorf("reading the end of %s to continue the audit chain: %w", backups[i], err)
			}
			if t.found {
				start[AnnotationPreviousFile] = filepath.Base(backups[i])
				if t.skipped > 0 && start[AnnotationSkippedFile] == "" {
					t.annotate(start, filepath.Base(backups[i]))
				}
			}
		}
		t.size = 0
	}
	l.seq, l.prev = t.seq, t.hash
	if !t.found {
		l.prev = Genesis()
	}
	l.synced.Store(l.seq)
	l.stSeq, l.stPrev = l.seq, l.prev
	if o.MaxBackups > 0 {
		l.prunedThrough = findPrunedThrough(o.Path)
	}
	if err := l.openCurrent(); err != nil {
		return nil, err
	}
	if err := syncDir(o.Path); err != nil {
		_ = l.f.Close()
		return nil, err
	}
	l.size = t.size
	if _, err := l.checkpoint(start); err != nil {
		_ = l.f.Close()
		return nil, err
	}
	if err := l.Sync(); err != nil {
		_ = l.f.Close()
		return nil, err
	}
	return l, nil
}

func (l *Log) openCurrent() error {
	f, err := l.o.OpenFile(l.o.Path)
	if err != nil {
		return option.Errorf("opening the audit log: %w; make its directory writable by the agent or choose another %s", err, pathOption)
	}
	l.f = f
	return nil
}

// NewAuditID returns a new audit ID, unique among the IDs of every Log
// (see IDs).
func (l *Log) NewAuditID() string { return l.ids.New() }

// Seq returns the sequence number of the last record written.
func (l *Log) Seq() uint64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.seq
}

// Close writes a stop checkpoint, syncs and closes the file.
func (l *Log) Close() error {
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return nil
	}
	_, cpErr := l.checkpoint(map[string]string{AnnotationCheckpoint: "stop"})
	l.mu.Unlock()
	syncErr := l.Sync()
	l.mu.Lock()
	defer l.mu.Unlock()
	l.closed = true
	return errors.Join(cpErr, syncErr, l.f.Close())
}
