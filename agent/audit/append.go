package audit

// Appending records: concurrent appends are staged under the log's lock,
// chained, and written together with one write.

import (
	"errors"
	"fmt"
	"maps"
	"strconv"
)

// Append writes ev as the next record. With durable, it returns only once
// the record is fsynced. On error nothing was added to the chain.
//
// Concurrent appends are written together (group write): each queues its
// record, and whoever holds the log's lock writes every queued record, in
// queue order, with one write(2); the others find their record written
// (or the write's error) when they get the lock.
//
// With Options.Admit, a record it refuses is replaced by its request's
// denial, and Append returns a *RefusedError holding the refusal.
func (l *Log) Append(ev *Event, durable bool) error {
	r := &pending{ev: ev, admit: l.o.Admit != nil}
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
	// admit asks Options.Admit before the record is staged; denial is
	// what was staged in its place when Admit refused it.
	admit  bool
	denial *pending
}

// RefusedError is what Append returns for a record Options.Admit refused:
// the request must not go on, and the log holds its denial instead of its
// record (unless a write error is also wrapped).
type RefusedError struct{ Err error }

func (r *RefusedError) Error() string { return r.Err.Error() }

func (r *RefusedError) Unwrap() error { return r.Err }

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
			var rf *RefusedError
			if !errors.As(err, &rf) {
				continue
			}
			r.denial = &pending{ev: l.denial(r.ev, rf.Err)}
			if err := l.stage(r.denial); err != nil {
				r.denial.err = err
				continue
			}
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
		if r.denial != nil && r.denial.err != nil {
			r.err = fmt.Errorf("%w; the request's denial was not written either: %w", r.err, r.denial.err)
		}
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
	if l.o.MaxSize > 0 && !l.rotating && l.size+int64(start) > 0 && l.size+int64(start+len(line)) > l.o.MaxSize {
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
	if r.admit {
		// Asked once the record is encoded, after any rotation, so that
		// ahead counts exactly the records OnRecord sees before it.
		if err := l.o.Admit(r.ev, len(l.staged)); err != nil {
			l.wbuf = l.wbuf[:len(l.wbuf)-len(line)]
			return &RefusedError{err}
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

// denial is the record of a request whose record Options.Admit refused:
// the same request, completed as denied, with the refusal as the reason.
func (l *Log) denial(ev *Event, err error) *Event {
	d := *ev
	d.Annotations = maps.Clone(ev.Annotations)
	if d.Annotations == nil {
		d.Annotations = map[string]string{}
	}
	msg := err.Error()
	d.Stage = StageResponseComplete
	d.StageTimestamp = MicroTime{l.o.Now()}
	d.ResponseStatus = &Status{Status: "Failure", Message: msg, Reason: "Unavailable", Code: 503}
	SetDecision(d.Annotations, false, RuleAuditUnavailable)
	d.Annotations[AnnotationReason] = msg
	d.Annotations[AnnotationGRPCCode] = "Unavailable"
	return &d
}
