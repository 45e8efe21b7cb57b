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
	// OnHead, when set, is called after a rotation and its pruning, with
	// the log's lock held: it must not block or call the Log (an anchor
	// publisher signals itself and reads Head later).
	OnHead func()
	// OnRecord, when set, is called with every record written, in chain
	// order, with the log's lock held: line (newline included) is reused
	// once it returns, so it must copy it, and it must not block (the
	// webhook backend queues it).
	OnRecord func(seq uint64, line []byte)
}

// AgentFlags maps the fields of Options that this package's messages name
// to the pipeguard-agent flags that set them, for the commands that show
// those messages.
var AgentFlags = map[string]string{"Options.Path": "--audit-log-path", "Options.MaxBackups": "--audit-log-maxbackup"}

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
// a start checkpoint. When the file ends with a torn record, left by a
// crash in the middle of a write, the file is rotated so that the torn bytes
// stay at the end of a file, and the start checkpoint says how many there
// were.
func Open(o Options) (*Log, error) {
	if o.Path == "" {
		return nil, errors.New("no audit log path: set Options.Path")
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
		return fmt.Errorf("opening the audit log: %w; make its directory writable by the agent or choose another Options.Path", err)
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

// Append writes ev as the next record. With durable, it returns only once
// the record is fsynced. On error nothing was added to the chain.
//
// Concurrent appends are written together (group write): each queues its
// record, and whoever holds the log's lock writes every queued record, in
// queue order, with one write(2); the others find their record written
// (or the write's error) when they get the lock.
func (l *Log) Append(ev *Event, durable bool) error {
	r := &pending{ev: ev}
	l.qmu.Lock()
	l.queue = append(l.queue, r)
	l.qmu.Unlock()
	l.mu.Lock()
	if !r.done {
		l.writeQueued()
	}
	l.mu.Unlock()
	if r.err != nil {
		return r.err
	}
	if durable {
		return l.syncTo(r.seq)
	}
	return nil
}

// pending is a record on its way to the file.
type pending struct {
	ev   *Event
	seq  uint64 // set once staged
	err  error
	done bool // written or failed; l.mu is held to read it
}

// writeQueued stages every queued record, a periodic checkpoint after
// every CheckpointEvery of them, and writes them. A record that cannot be
// staged fails alone; a failed write fails every record it held. l.mu is
// held.
func (l *Log) writeQueued() {
	l.qmu.Lock()
	batch := l.queue
	l.queue = l.spare[:0]
	l.qmu.Unlock()
	for _, r := range batch {
		if err := l.stage(r); err != nil {
			r.err = err
			continue
		}
		l.sinceCP++
		if l.sinceCP >= l.o.CheckpointEvery {
			if err := l.stage(&pending{ev: l.checkpointEvent(map[string]string{AnnotationCheckpoint: "periodic"})}); err != nil {
				r.err = err
			}
		}
	}
	_ = l.flush() // its error is in every record it failed
	for _, r := range batch {
		r.done = true
	}
	clear(batch)
	l.spare = batch[:0]
}

// appendLocked writes one record at once and returns its sequence number.
// l.mu is held and nothing is staged.
func (l *Log) appendLocked(ev *Event) (uint64, error) {
	r := &pending{ev: ev}
	if err := l.stage(r); err != nil {
		return 0, err
	}
	if err := l.flush(); err != nil {
		return 0, err
	}
	return r.seq, nil
}

// staged is a record encoded into l.wbuf, not yet written.
type staged struct {
	r   *pending
	end int // where its line ends in l.wbuf
}

// stage assigns the chain fields of r's record after the records staged
// so far and encodes it into the write buffer. When the record would take
// the file past MaxSize, the staged records are written and the file is
// rotated first. l.mu is held.
func (l *Log) stage(r *pending) error {
	if l.broken != nil {
		return l.broken
	}
	if l.closed {
		return errors.New("audit log is closed")
	}
	start := len(l.wbuf)
	line, err := l.encode(r.ev, l.stSeq+1, l.stPrev)
	if err != nil {
		return err
	}
	if l.o.MaxSize > 0 && l.size+int64(start) > 0 && l.size+int64(start+len(line)) > l.o.MaxSize {
		l.wbuf = l.wbuf[:start]
		if err := l.flush(); err != nil {
			return err
		}
		if err := l.rotate(); err != nil {
			return err
		}
		if line, err = l.encode(r.ev, l.stSeq+1, l.stPrev); err != nil {
			return err
		}
	}
	l.stSeq++
	l.stPrev = Link(l.stPrev, line[:len(line)-1])
	r.seq = l.stSeq
	l.staged = append(l.staged, staged{r: r, end: len(l.wbuf)})
	return nil
}

// flush writes the staged records with one write and adds them to the
// chain. On error none is added, the file keeps only whole records, and
// every staged record gets the error. l.mu is held.
func (l *Log) flush() error {
	if len(l.staged) == 0 {
		return nil
	}
	buf := l.wbuf
	n, err := l.f.Write(buf)
	if err != nil {
		if n > 0 {
			// Undo the partial lines so the file keeps only whole records.
			if terr := l.f.Truncate(l.size); terr != nil {
				l.broken = fmt.Errorf("audit log %s holds a partial record that could not be removed (%w); restart the agent to rotate it away", l.o.Path, terr)
			}
		}
		err = fmt.Errorf("writing audit record to %s: %w", l.o.Path, err)
		for _, s := range l.staged {
			s.r.err = err
		}
		l.stSeq, l.stPrev = l.seq, l.prev
		l.resetStaged()
		return err
	}
	l.size += int64(n)
	from := 0
	for _, s := range l.staged {
		l.seq++
		if l.o.OnRecord != nil {
			l.o.OnRecord(l.seq, buf[from:s.end])
		}
		from = s.end
	}
	l.prev = l.stPrev
	l.resetStaged()
	return nil
}

// maxKeptBuffer bounds the write buffer kept between writes, so that one
// large Request-level record or batch does not pin its memory.
const maxKeptBuffer = 64 << 10

func (l *Log) resetStaged() {
	clear(l.staged)
	l.staged = l.staged[:0]
	if cap(l.wbuf) > maxKeptBuffer {
		l.wbuf = nil
	}
	l.wbuf = l.wbuf[:0]
}

// encode appends one line, newline included, to the write buffer and
// returns it, with the chain annotations of seq and prev (which are not
// added to ev.Annotations). On error the buffer is left as it was. l.mu
// is held.
func (l *Log) encode(ev *Event, seq uint64, prev Hash) ([]byte, error) {
	start := len(l.wbuf)
	b, err := appendRecord(l.wbuf, ev, &chainLink{seq: seq, prev: prev})
	if err != nil {
		l.wbuf = b[:start]
		return nil, fmt.Errorf("encoding audit record: %w", err)
	}
	if len(b)-start >= MaxRecordBytes && ev.RequestObject != nil {
		l.wbuf = b[:start]
		ev.RequestObject = nil
		if ev.Annotations == nil {
			ev.Annotations = map[string]string{}
		}
		ev.Annotations[AnnotationTruncated] = "request body over " + strconv.Itoa(MaxRecordBytes) + " bytes left out"
		return l.encode(ev, seq, prev)
	}
	l.wbuf = append(b, '\n')
	return l.wbuf[start:], nil
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
