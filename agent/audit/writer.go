package audit

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-logr/logr"
	"github.com/google/uuid"
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
	// bytes; 0 never rotates.
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
}

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
	broken        error  // set when a failed write could not be undone
	buf           []byte // the line being written; reused
	closed        bool
	syncMu        sync.Mutex
	syncDone      *sync.Cond // on syncMu, broadcast when an fsync ends
	syncing       bool       // an fsync is running; syncMu is held to read it
	synced        atomic.Uint64
	syncErrs      atomic.Uint64
}

func openAppend(path string) (File, error) {
	return os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
}

// Open continues the chain of the log at o.Path (or starts one) and writes
// a start checkpoint. When the file ends with a torn record, left by a
// crash in the middle of a write, the file is rotated so that the torn bytes
// stay at the end of a file, and the start checkpoint says how many there
// were.
func Open(o Options) (*Log, error) {
	if o.Path == "" {
		return nil, errors.New("no audit log path: set --audit-log-path")
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
	l := &Log{o: o, prev: Genesis}
	l.syncDone = sync.NewCond(&l.syncMu)
	start := map[string]string{AnnotationCheckpoint: "start"}

	t, err := readTail(o.Path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
	case err != nil:
		return nil, fmt.Errorf("reading the end of the audit log to continue its chain: %w", err)
	}
	from := o.Path
	if t.torn > 0 {
		// Keep the torn bytes where verify expects them: at the end of a file.
		rotated, err := l.renameAside()
		if err != nil {
			return nil, fmt.Errorf("moving aside %s, which ends with a torn record: %w", o.Path, err)
		}
		o.Log.Info("the audit log ended with a torn record (the agent stopped mid-write); it was rotated and the chain continues", "file", rotated, "tornBytes", t.torn)
		start[AnnotationTornBytes] = strconv.FormatInt(t.torn, 10)
		start[AnnotationPreviousFile] = filepath.Base(rotated)
		from = rotated
		t.size = 0
	}
	if !t.found {
		// Continue from the newest rotated file, if any.
		backups, err := Backups(o.Path)
		if err != nil {
			return nil, fmt.Errorf("listing rotated audit files: %w", err)
		}
		t = tail{}
		for i := len(backups) - 1; i >= 0 && !t.found; i-- {
			if t, err = readTail(backups[i]); err != nil {
				return nil, fmt.Errorf("reading the end of %s to continue the audit chain: %w", backups[i], err)
			}
			from = backups[i]
		}
		if t.found {
			start[AnnotationPreviousFile] = filepath.Base(from)
		}
		t.size = 0
	}
	if t.found {
		if l.seq, l.prev, err = lastLink(from, t); err != nil {
			return nil, fmt.Errorf("%w; move the audit files aside (pipeguard audit verify shows what is wrong) to start a new chain", err)
		}
	}
	l.synced.Store(l.seq)
	if o.MaxBackups > 0 {
		l.prunedThrough = findPrunedThrough(o.Path)
	}
	if err := l.openCurrent(); err != nil {
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
		return fmt.Errorf("opening the audit log: %w; make its directory writable by the agent or choose another --audit-log-path", err)
	}
	l.f = f
	return nil
}

// renameAside renames the current file to a free backup name.
func (l *Log) renameAside() (string, error) {
	now := l.o.Now()
	for n := 0; ; n++ {
		name := backupName(l.o.Path, now, n)
		if _, err := os.Lstat(name); errors.Is(err, fs.ErrNotExist) {
			return name, os.Rename(l.o.Path, name)
		}
	}
}

// Seq returns the sequence number of the last record written.
func (l *Log) Seq() uint64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.seq
}

// Append writes ev as the next record. With durable, it returns only once
// the record is fsynced. On error nothing was added to the chain.
func (l *Log) Append(ev *Event, durable bool) error {
	l.mu.Lock()
	seq, err := l.appendLocked(ev)
	if err == nil {
		l.sinceCP++
		if l.sinceCP >= l.o.CheckpointEvery {
			_, err = l.checkpoint(map[string]string{AnnotationCheckpoint: "periodic"})
		}
	}
	l.mu.Unlock()
	if err != nil {
		return err
	}
	if durable {
		return l.syncTo(seq)
	}
	return nil
}

// appendLocked assigns the chain fields, rotates when due and writes one
// line. l.mu is held.
func (l *Log) appendLocked(ev *Event) (uint64, error) {
	if l.broken != nil {
		return 0, l.broken
	}
	if l.closed {
		return 0, errors.New("audit log is closed")
	}
	line, err := l.encode(ev, l.seq+1, l.prev)
	if err != nil {
		return 0, err
	}
	if l.o.MaxSize > 0 && l.size > 0 && l.size+int64(len(line)) > l.o.MaxSize {
		if err := l.rotate(); err != nil {
			return 0, err
		}
		if line, err = l.encode(ev, l.seq+1, l.prev); err != nil {
			return 0, err
		}
	}
	n, err := l.f.Write(line)
	if err != nil {
		if n > 0 {
			// Undo the partial line so the file keeps only whole records.
			if terr := l.f.Truncate(l.size); terr != nil {
				l.broken = fmt.Errorf("audit log %s holds a partial record that could not be removed (%v); restart the agent to rotate it away", l.o.Path, terr)
			}
		}
		return 0, fmt.Errorf("writing audit record to %s: %w", l.o.Path, err)
	}
	l.size += int64(n)
	l.seq++
	l.prev = Link(l.prev, line[:len(line)-1])
	return l.seq, nil
}

// maxKeptBuffer bounds the encoding buffer kept between records, so that
// one large Request-level record does not pin its memory.
const maxKeptBuffer = 64 << 10

// encode sets the chain annotations and encodes one line, newline included.
// The line lives in l.buf until the next encode; l.mu is held.
func (l *Log) encode(ev *Event, seq uint64, prev Hash) ([]byte, error) {
	if ev.Annotations == nil {
		ev.Annotations = map[string]string{}
	}
	ev.Annotations[AnnotationSeq] = strconv.FormatUint(seq, 10)
	ev.Annotations[AnnotationPrevHash] = prev.String()
	if cap(l.buf) > maxKeptBuffer {
		l.buf = nil
	}
	b, err := appendEvent(l.buf[:0], ev)
	if err != nil {
		return nil, fmt.Errorf("encoding audit record: %w", err)
	}
	l.buf = b
	if len(b) >= MaxRecordBytes && ev.RequestObject != nil {
		ev.RequestObject = nil
		ev.Annotations[AnnotationTruncated] = "request body over " + strconv.Itoa(MaxRecordBytes) + " bytes left out"
		return l.encode(ev, seq, prev)
	}
	l.buf = append(b, '\n')
	return l.buf, nil
}

// checkpoint writes a checkpoint record. l.mu is held.
func (l *Log) checkpoint(annotations map[string]string) (uint64, error) {
	now := l.o.Now()
	annotations[AnnotationRecord] = RecordCheckpoint
	ev := &Event{
		Kind: Kind, APIVersion: APIVersion, Level: LevelMetadata,
		AuditID: uuid.NewString(), Stage: StageResponseComplete,
		RequestURI: "pipeguard:checkpoint", Verb: "checkpoint",
		User:                     UserInfo{Username: "system:pipeguard-agent"},
		RequestReceivedTimestamp: MicroTime{now}, StageTimestamp: MicroTime{now},
		Annotations: annotations,
	}
	l.sinceCP = 0
	return l.appendLocked(ev)
}

// rotate syncs and renames the current file, opens a new one, writes a
// rotate checkpoint to it and removes the oldest backups beyond MaxBackups.
// l.mu is held.
func (l *Log) rotate() error {
	if err := l.f.Sync(); err != nil {
		return fmt.Errorf("syncing the audit log before rotation: %w", err)
	}
	if err := l.f.Close(); err != nil {
		return fmt.Errorf("closing the audit log for rotation: %w", err)
	}
	l.storeSynced(l.seq)
	rotated, err := l.renameAside()
	if err != nil {
		l.broken = fmt.Errorf("rotating the audit log: %w; restart the agent once %s is writable", err, filepath.Dir(l.o.Path))
		return l.broken
	}
	if err := l.openCurrent(); err != nil {
		l.broken = err
		return err
	}
	l.size = 0
	if _, err := l.checkpoint(map[string]string{AnnotationCheckpoint: "rotate", AnnotationPreviousFile: filepath.Base(rotated)}); err != nil {
		return err
	}
	return l.prune()
}

// prune removes the oldest backups beyond MaxBackups, first writing a
// checkpoint naming each file, its sequence numbers and its last hash, so
// that verify can tell a pruned file from a deleted one. l.mu is held.
func (l *Log) prune() error {
	if l.o.MaxBackups == 0 {
		return nil
	}
	backups, err := Backups(l.o.Path)
	if err != nil {
		return fmt.Errorf("listing rotated audit files: %w", err)
	}
	for len(backups) > l.o.MaxBackups {
		old := backups[0]
		backups = backups[1:]
		first, last, lastHash, err := fileRange(old)
		if err != nil {
			l.o.Log.Error(err, "not removing a rotated audit file that cannot be read", "file", old)
			continue
		}
		// Prune checkpoints are cumulative, so the newest one accounts for
		// every file removed before, even once those checkpoints are pruned.
		if first == 1 || l.prunedThrough == first-1 {
			first = 1
			l.prunedThrough = last
		}
		if _, err := l.checkpoint(map[string]string{
			AnnotationCheckpoint: "prune",
			AnnotationPrunedFile: filepath.Base(old),
			AnnotationPrunedSeqs: fmt.Sprintf("%d-%d", first, last),
			AnnotationPrunedHash: lastHash.String(),
		}); err != nil {
			return err
		}
		if err := os.Remove(old); err != nil {
			l.o.Log.Error(err, "removing a rotated audit file beyond --audit-log-maxbackup", "file", old)
		}
	}
	return nil
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
		_ = scanFile(files[i], func(r Record) error {
			if r.Err == nil && r.Event.Annotation(AnnotationCheckpoint) == "prune" {
				if p, err := parsePrune(r); err == nil && p.first == 1 && p.last > through {
					through = p.last
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
	err = scanFile(path, func(r Record) error {
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

// Sync fsyncs everything written so far.
func (l *Log) Sync() error {
	l.mu.Lock()
	seq := l.seq
	l.mu.Unlock()
	return l.syncTo(seq)
}

// syncTo returns once record seq is on disk. One caller at a time fsyncs,
// covering every record written before it started; the others wait for it
// and are all woken when it ends, so those it covered return at once and
// one of the rest starts the next fsync for everything written meanwhile
// (group commit).
func (l *Log) syncTo(seq uint64) error {
	if l.synced.Load() >= seq {
		return nil
	}
	l.syncMu.Lock()
	defer l.syncMu.Unlock()
	for l.synced.Load() < seq {
		if l.syncing {
			l.syncDone.Wait()
			continue
		}
		l.syncing = true
		l.mu.Lock()
		f, target := l.f, l.seq
		l.mu.Unlock()
		l.syncMu.Unlock()
		err := f.Sync()
		l.syncMu.Lock()
		l.syncing = false
		if err == nil {
			l.storeSynced(target)
		}
		l.syncDone.Broadcast()
		if err != nil {
			if l.synced.Load() >= seq {
				return nil // the file was rotated and synced meanwhile
			}
			l.syncErrs.Add(1)
			return fmt.Errorf("syncing the audit log %s: %w", l.o.Path, err)
		}
	}
	return nil
}

func (l *Log) storeSynced(seq uint64) {
	for {
		cur := l.synced.Load()
		if cur >= seq || l.synced.CompareAndSwap(cur, seq) {
			return
		}
	}
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
