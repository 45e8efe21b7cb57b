package audit

// Blocking mode's shares: each caller's records may hold a part of the
// webhook's buffer, so that one caller cannot have every other refused.

import "fmt"

// maxAdmitted is how many admissions Record may find waiting before it
// looks for those a failed write left (the next records, which take
// their numbers, replace them otherwise).
const maxAdmitted = 4096

// settleAdmitted drops the admission of seq, whose caller now holds it
// as a queued record, and, past maxAdmitted, those before seq that
// Record never saw (their write failed). w.mu is held.
func (w *Webhook) settleAdmitted(seq uint64) {
	delete(w.admitted, seq)
	if len(w.admitted) < maxAdmitted {
		return
	}
	for s, a := range w.admitted {
		if s < seq {
			if !a.deny {
				w.unreserve(a.caller, 0)
			}
			delete(w.admitted, s)
		}
	}
}

// unreserve gives back one record of size bytes from caller's share.
// w.mu is held.
func (w *Webhook) unreserve(caller string, size int64) {
	if caller == "" {
		return
	}
	if s := w.callers[caller]; s != nil {
		s.records--
		s.bytes -= size
		if s.records <= 0 {
			delete(w.callers, caller)
		}
	}
}

// Admit fits Options.Admit, for the records a request waits on (Attribute
// takes the others). In Block mode it refuses, at once, a record that
// would find the buffer full, or its caller's share of it, once the ahead
// records written before it are queued; otherwise it admits every record.
// The error names what is full: the buffer, or the caller's share.
func (w *Webhook) Admit(ev *Event, ahead int) error {
	if !w.o.Block {
		return nil
	}
	caller := CallerKey(ev)
	w.mu.Lock()
	defer w.mu.Unlock()
	if bytesFull := w.bytes >= w.o.BufferBytes; w.closed || bytesFull || w.buffered+w.roomAhead(ahead) >= w.o.BufferSize {
		return fmt.Errorf("%w, and in blocking mode requests are refused until it catches up", w.fullError(bytesFull))
	}
	if s := w.callers[caller]; s != nil && (s.records >= w.o.BufferSize/WebhookCallerShare || s.bytes >= w.o.BufferBytes/WebhookCallerShare) {
		// The request's denial takes this record's place in the log.
		w.setAdmission(w.lastSeq+uint64(ahead)+1, admission{caller: caller, deny: true})
		return fmt.Errorf("audit webhook %s: the share of caller %s (1/%d of the buffer: %d records or %d bytes) is full, and in blocking mode its requests are refused until the receiver takes its records; other callers go on",
			w.url, caller, WebhookCallerShare, w.o.BufferSize/WebhookCallerShare, w.o.BufferBytes/WebhookCallerShare)
	}
	w.reserve(caller, ahead)
	return nil
}

// roomAhead is how many of the ahead records written before the next
// one will take room in the buffer: all but the denials of callers past
// their share, which the log file keeps and the buffer never holds. It
// looks them up only when the buffer could be full, so that a request
// pays nothing while there is room. w.mu is held.
func (w *Webhook) roomAhead(ahead int) int {
	if w.buffered+ahead < w.o.BufferSize {
		return ahead
	}
	room := ahead
	for s := w.lastSeq + 1; s <= w.lastSeq+uint64(ahead); s++ {
		if a, ok := w.admitted[s]; ok && a.deny {
			room--
		}
	}
	return room
}

// Attribute counts, in Block mode, the record that ahead records follow
// against its caller's share without refusing it: the completion of a
// host operation that ran, a denial.
func (w *Webhook) Attribute(ev *Event, ahead int) {
	if !w.o.Block {
		return
	}
	caller := CallerKey(ev)
	w.mu.Lock()
	defer w.mu.Unlock()
	w.reserve(caller, ahead)
}

// reserve holds one record of caller's share for the record that will
// be seq lastSeq+ahead+1. w.mu is held.
func (w *Webhook) reserve(caller string, ahead int) {
	w.setAdmission(w.lastSeq+uint64(ahead)+1, admission{caller: caller})
	s := w.callers[caller]
	if s == nil {
		s = &share{}
		w.callers[caller] = s
	}
	s.records++
}

// setAdmission notes the caller of the record that will be seq. w.mu is
// held.
func (w *Webhook) setAdmission(seq uint64, a admission) {
	if old, ok := w.admitted[seq]; ok && !old.deny {
		// A failed write left it; its number is written again.
		w.unreserve(old.caller, 0)
	}
	w.admitted[seq] = a
}

// CallerKey names the caller a record is attributed to, as blocking mode
// shares the buffer: its pod (pod:UID), else its container, else its
// Windows SID or Linux uid, else its process, else its username.
func CallerKey(ev *Event) string {
	u := ev.User
	for _, k := range []struct{ key, prefix string }{
		{ExtraPodUID, "pod:"}, {ExtraContainerID, "container:"}, {ExtraSID, "sid:"}, {ExtraUID, "uid:"}, {ExtraPID, "pid:"},
	} {
		if v := u.ExtraValue(k.key); v != "" {
			return k.prefix + v
		}
	}
	return "user:" + u.Username
}
