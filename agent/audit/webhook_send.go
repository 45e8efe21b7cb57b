package audit

// Sending the webhook's batches: timing, retries, splitting the batches
// the receiver refuses, and shutdown.

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Annotations of a webhook-rejected checkpoint: the seq of the record
// the receiver refused on its own, and its answer.
const (
	AnnotationWebhookRejectedSeq    = "pipeguard.io/webhook-rejected-seq"
	AnnotationWebhookRejectedReason = "pipeguard.io/webhook-rejected-reason"
)

// MaxRejectedReasonBytes bounds the receiver's answer a webhook-rejected
// checkpoint holds (AnnotationWebhookRejectedReason).
const MaxRejectedReasonBytes = 512

// maxNotes bounds the seqs of the webhook's own checkpoints it keeps, so
// that a refused one is not reported by another, for ever.
const maxNotes = 1024

// Start sends batches in the background until Stop.
func (w *Webhook) Start() { w.startOnce.Do(func() { go w.run() }) }

// Stop ends the sender. It sends what is queued, one attempt per batch,
// until one fails or ctx or the shutdown bound (ShutdownTimeout) ends;
// the request in flight is then cut, and what the receiver has not taken
// is counted as failed and logged. A webhook never started drains the
// same way.
func (w *Webhook) Stop(ctx context.Context) {
	w.Start()
	w.stopOnce.Do(func() { close(w.stop) })
	defer w.cancel()
	t := time.NewTimer(w.o.ShutdownTimeout)
	defer t.Stop()
	select {
	case <-w.done:
		return
	case <-ctx.Done():
	case <-t.C:
	}
	// Every wait of the sender ends with w.ctx or w.stop.
	w.cancel()
	<-w.done
}

func (w *Webhook) wakeSender() {
	select {
	case w.wake <- struct{}{}:
	default:
	}
}

func (w *Webhook) run() {
	defer close(w.done)
	t := time.NewTimer(w.o.BatchMaxWait)
	defer t.Stop()
	for {
		select {
		case <-w.stop:
			w.drain(nil)
			return
		case <-w.wake:
		case <-t.C:
		}
		for batch := w.take(); len(batch) > 0; batch = w.take() {
			if left, _ := w.deliver(batch, false); len(left) > 0 {
				w.drain(left)
				return
			}
		}
		t.Reset(w.o.BatchMaxWait)
	}
}

// take removes up to one batch from the queue: BatchMaxSize records and
// BatchMaxBytes bytes at most, and at least one record. Its records stay
// counted in the buffer until the receiver takes or refuses them.
func (w *Webhook) take() []item {
	w.mu.Lock()
	defer w.mu.Unlock()
	n, size := 0, 0
	for n < len(w.queue) && n < w.o.BatchMaxSize {
		size += len(w.queue[n].line)
		if n > 0 && size > w.o.BatchMaxBytes {
			break
		}
		n++
	}
	batch := w.queue[:n:n]
	w.queue = w.queue[n:]
	for _, it := range batch {
		w.qbytes -= int64(len(it.line))
	}
	return batch
}

// deliver posts batch. A batch the receiver refuses (see refused) is
// split in halves, each delivered on its own, down to the single records
// it refuses, which are reported one by one. Any other failure is retried
// with exponential backoff, and the batch dropped after the last retry;
// with final (at shutdown) there is one attempt and no wait, and the
// records of a failed one are returned with its error, as are those of a
// wait that Stop interrupted.
func (w *Webhook) deliver(batch []item, final bool) ([]item, error) {
	backoff := w.o.InitialBackoff
	retries := w.o.Retries
	if final {
		retries = 0
	}
	var err error
	for attempt := 0; attempt <= retries; attempt++ {
		if attempt > 0 {
			t := time.NewTimer(backoff)
			select {
			case <-w.stop:
				t.Stop()
				return batch, err
			case <-t.C:
			}
			backoff *= 2
		}
		if err = w.post(batch); err == nil {
			w.settle(batch, outcomeSent, nil)
			return nil, nil
		}
		if refused(err) {
			return w.split(batch, final, err)
		}
		if attempt < retries {
			w.o.Log.Error(err, "sending audit records to the webhook receiver failed; retrying", "records", len(batch), "attempt", attempt+1, "retryIn", backoff.String())
		}
	}
	if final {
		return batch, err
	}
	w.settle(batch, outcomeFailed, nil)
	w.o.Log.Error(err, "audit records not sent to the webhook receiver after every retry; the log file keeps them", "records", len(batch), "retries", w.o.Retries,
		"firstSeq", batch[0].seq, "lastSeq", batch[len(batch)-1].seq)
	return nil, nil
}

// split delivers the halves of a batch the receiver refused, or reports
// its one record. It returns what is left unsent, a suffix of batch.
func (w *Webhook) split(batch []item, final bool, err error) ([]item, error) {
	if len(batch) == 1 {
		w.settle(batch, outcomeRejected, err)
		return nil, nil
	}
	h := len(batch) / 2
	if left, err := w.deliver(batch[:h], final); len(left) > 0 {
		return slices.Concat(left, batch[h:]), err
	}
	return w.deliver(batch[h:], final)
}

// outcome is what became of a batch's records.
type outcome int

const (
	outcomeSent     outcome = iota // the receiver took them
	outcomeFailed                  // dropped after every retry, or at shutdown
	outcomeRejected                // the receiver refused the record alone
)

// settle takes the records of batch out of the buffer. Sent and rejected
// ones leave the unsent set; a rejected one is logged, counted and named
// by a checkpoint in the log (unless it is one of those checkpoints).
func (w *Webhook) settle(batch []item, o outcome, err error) {
	w.mu.Lock()
	for _, it := range batch {
		size := int64(len(it.line))
		w.buffered--
		w.bytes -= size
		w.unreserve(it.caller, size)
		if o != outcomeFailed {
			w.unsent.remove(it.seq)
		}
	}
	note, own := w.note, false
	if o != outcomeFailed {
		for _, it := range batch {
			own = own || w.notes[it.seq]
			delete(w.notes, it.seq)
		}
	}
	w.mu.Unlock()
	switch o {
	case outcomeSent:
		w.sent.Add(float64(len(batch)))
	case outcomeFailed:
		w.failed.Add(float64(len(batch)))
	case outcomeRejected:
		w.reject(batch[0], err, note, own)
	}
}

// reject reports a record the receiver refused on its own.
func (w *Webhook) reject(it item, err error, note func(map[string]string) (uint64, error), own bool) {
	w.rejected.Inc()
	seq := strconv.FormatUint(it.seq, 10)
	w.o.Log.Error(err, "audit record refused by the webhook receiver on its own: it is not sent, the other records of its batch are; the log file keeps it and a webhook-rejected checkpoint names it", "seq", it.seq, "bytes", len(it.line))
	if note == nil || own {
		return
	}
	reason := err.Error()
	if len(reason) > MaxRejectedReasonBytes {
		reason = strings.ToValidUTF8(reason[:MaxRejectedReasonBytes], "")
	}
	cp, nerr := note(map[string]string{AnnotationCheckpoint: "webhook-rejected", AnnotationWebhookRejectedSeq: seq, AnnotationWebhookRejectedReason: reason})
	if nerr != nil {
		w.o.Log.Error(nerr, "the checkpoint naming an audit record the webhook receiver refused could not be written; this line names it", "seq", it.seq)
		return
	}
	w.mu.Lock()
	if len(w.notes) >= maxNotes {
		clear(w.notes)
	}
	w.notes[cp] = true
	w.mu.Unlock()
}

// drain sends, at shutdown, batch (one an interrupted send left) and then
// the queue, one attempt per batch, and stops at the first failure; what
// is left then, and any record after it, is counted as failed.
func (w *Webhook) drain(batch []item) {
	var err error
	for {
		if len(batch) == 0 {
			batch = w.take()
		}
		if len(batch) == 0 {
			break
		}
		if batch, err = w.deliver(batch, true); len(batch) > 0 {
			break
		}
	}
	w.mu.Lock()
	w.closed = true
	rest := w.queue
	w.queue, w.qbytes = nil, 0
	dropped, droppedBytes := w.dropped, w.droppedBytes
	w.mu.Unlock()
	left := append(batch, rest...)
	if len(left) > 0 {
		w.settle(left, outcomeFailed, nil)
		w.o.Log.Error(err, "audit records not sent to the webhook receiver at shutdown; the log file keeps them", "records", len(left))
	}
	if dropped > 0 {
		w.o.Log.Error(w.fullError(droppedBytes), "audit records dropped from the webhook; the log file keeps them", "dropped", dropped)
	}
}

// EventListHeader and EventListFooter frame a batch: the records are the
// items, byte for byte as in the file, so that a receiver that saves the
// body keeps a chain that verifies.
const (
	eventListHeader = `{"kind":"EventList","apiVersion":"audit.k8s.io/v1","metadata":{},"items":[`
	eventListFooter = "]}\n"
)

// receiverError is the receiver's answer other than 2xx.
type receiverError struct {
	code int
	err  error
}

func (e *receiverError) Error() string { return e.err.Error() }

// refused reports whether the receiver refused the batch itself: a 4xx
// answer other than 408 (Request Timeout) and 429 (Too Many Requests),
// such as 413 (Content Too Large) or 400 for a record it cannot take.
// Sending it again would fail again; its parts may not.
func refused(err error) bool {
	var re *receiverError
	return errors.As(err, &re) && re.code/100 == 4 && re.code != http.StatusRequestTimeout && re.code != http.StatusTooManyRequests
}

// post sends one batch, within RequestTimeout and before Stop's bound.
func (w *Webhook) post(batch []item) error {
	var body bytes.Buffer
	body.WriteString(eventListHeader)
	for i, it := range batch {
		if i > 0 {
			body.WriteByte(',')
		}
		body.Write(it.line)
	}
	body.WriteString(eventListFooter)
	ctx, cancel := context.WithTimeout(w.ctx, w.o.RequestTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, w.url, &body)
	if err != nil {
		return fmt.Errorf("audit webhook receiver %s: %w", w.url, err)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := w.client.Do(req)
	if err == nil {
		defer resp.Body.Close()
		var msg []byte
		msg, err = io.ReadAll(io.LimitReader(resp.Body, 512))
		if err == nil && resp.StatusCode/100 != 2 {
			return &receiverError{resp.StatusCode, fmt.Errorf("audit webhook receiver %s answered %s: %s", w.url, resp.Status, bytes.TrimSpace(msg))}
		}
	}
	switch {
	case err == nil:
		return nil
	case w.ctx.Err() != nil:
		return fmt.Errorf("audit webhook receiver %s had not answered when the shutdown bound of %s passed", w.url, w.o.ShutdownTimeout)
	case errors.Is(ctx.Err(), context.DeadlineExceeded):
		return fmt.Errorf("audit webhook receiver %s did not answer within %s", w.url, w.o.RequestTimeout)
	}
	return fmt.Errorf("audit webhook receiver %s: %w", w.url, err)
}

// Unsent fits Options.Unsent: it lists the records from first to last
// that the receiver has not acknowledged (queued, in flight, dropped from
// a full buffer or failed), as "3-7,9", and "" when it has them all. A
// record it refused on its own counts as acknowledged: a checkpoint names
// it. Records written before the webhook started count as acknowledged:
// the webhook does not know them.
func (w *Webhook) Unsent(first, last uint64) string {
	w.mu.Lock()
	defer w.mu.Unlock()
	s, _ := w.unsent.within(first, last)
	return s
}

// Forget fits Options.Unsent: the files holding the records up to through
// were removed, and those of them the receiver never acknowledged are
// counted in pipeguard_agent_audit_webhook_unsent_pruned_total.
func (w *Webhook) Forget(through uint64) {
	w.mu.Lock()
	n := w.unsent.forget(through)
	w.mu.Unlock()
	w.prunedUnsent.Add(float64(n))
}
