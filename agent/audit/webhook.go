package audit

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sync"
	"time"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// Webhook backend defaults, those of kube-apiserver's batching webhook
// backend where it has one.
const (
	DefaultWebhookBatchMaxSize   = 400
	DefaultWebhookBatchMaxWait   = 30 * time.Second
	DefaultWebhookBufferSize     = 10000
	DefaultWebhookInitialBackoff = 10 * time.Second
	DefaultWebhookRetries        = 5
	// DefaultWebhookRequestTimeout bounds one request to the receiver, so
	// that a receiver that accepts and never answers holds the sender no
	// longer than that.
	DefaultWebhookRequestTimeout = 10 * time.Second
	// WebhookShutdownTimeout bounds Stop: what the receiver has not taken
	// by then is counted and logged as not sent.
	WebhookShutdownTimeout = 10 * time.Second
)

// overflowLogInterval spaces the log lines about records dropped from a
// full buffer, which can come once per request.
const overflowLogInterval = 10 * time.Second

// WebhookOptions configures a Webhook.
type WebhookOptions struct {
	// ConfigFile is a kubeconfig whose current context names the receiver
	// (its cluster's server is the URL records are POSTed to) and the
	// credentials to use, as kube-apiserver's --audit-webhook-config-file.
	ConfigFile string
	// BatchMaxSize records at most per request; BatchMaxWait is how long a
	// record waits for a batch to fill.
	BatchMaxSize int
	BatchMaxWait time.Duration
	// BufferSize bounds the records waiting to be sent; records beyond it
	// are dropped from the webhook, counted and logged.
	BufferSize int
	// Block refuses requests rather than let their records miss the
	// webhook: with the buffer full, Admit fails at once with an error
	// naming the receiver, and the log writes the request's denial in
	// place of its record (see Options.Admit). Nothing ever waits for room.
	Block bool
	// InitialBackoff is the wait before the first retry of a failed batch;
	// it doubles for each of at most Retries retries (0: the default,
	// negative: none).
	InitialBackoff time.Duration
	Retries        int
	// RequestTimeout bounds each request; 0: DefaultWebhookRequestTimeout.
	RequestTimeout time.Duration
	// ShutdownTimeout bounds Stop; 0: WebhookShutdownTimeout.
	ShutdownTimeout time.Duration
	Log             logr.Logger
}

// Webhook sends every record, exactly as written to the file, to a
// receiver as audit.k8s.io/v1 EventList batches, off the request path:
// Record and Admit take a short lock of their own and never wait for the
// receiver.
type Webhook struct {
	o      WebhookOptions
	url    string
	client *http.Client
	// ctx ends the requests in flight once Stop's bound has passed.
	ctx    context.Context
	cancel context.CancelFunc

	// mu guards the fields below; it is never held while waiting.
	mu       sync.Mutex
	queue    [][]byte
	closed   bool      // the sender has ended; later records are not sent
	dropped  int       // records dropped since the last overflow log line
	loggedAt time.Time // of the last overflow log line

	sent, overflow, failed prometheus.Counter
	wake, stop, done       chan struct{}
	startOnce, stopOnce    sync.Once
}

// NewWebhook reads the receiver from o.ConfigFile.
func NewWebhook(o WebhookOptions) (*Webhook, error) {
	cfg, err := clientcmd.BuildConfigFromFlags("", o.ConfigFile)
	if err != nil {
		return nil, fmt.Errorf("audit webhook config file %s: %w; give a kubeconfig whose current context names the receiver", o.ConfigFile, err)
	}
	client, err := rest.HTTPClientFor(cfg)
	if err != nil {
		return nil, fmt.Errorf("audit webhook config file %s: %w", o.ConfigFile, err)
	}
	if o.BatchMaxSize <= 0 {
		o.BatchMaxSize = DefaultWebhookBatchMaxSize
	}
	if o.BatchMaxWait <= 0 {
		o.BatchMaxWait = DefaultWebhookBatchMaxWait
	}
	if o.BufferSize <= 0 {
		o.BufferSize = DefaultWebhookBufferSize
	}
	if o.InitialBackoff <= 0 {
		o.InitialBackoff = DefaultWebhookInitialBackoff
	}
	if o.RequestTimeout <= 0 {
		o.RequestTimeout = DefaultWebhookRequestTimeout
	}
	if o.ShutdownTimeout <= 0 {
		o.ShutdownTimeout = WebhookShutdownTimeout
	}
	switch {
	case o.Retries == 0:
		o.Retries = DefaultWebhookRetries
	case o.Retries < 0:
		o.Retries = 0
	}
	counter := func(name, help string) prometheus.Counter {
		return prometheus.NewCounter(prometheus.CounterOpts{Namespace: "pipeguard", Subsystem: "agent", Name: name, Help: help})
	}
	w := &Webhook{
		o: o, url: cfg.Host, client: client,
		sent:     counter("audit_webhook_sent_total", "Audit records the webhook receiver accepted."),
		overflow: counter("audit_webhook_overflow_total", "Audit records not sent to the webhook receiver because its buffer was full."),
		failed:   counter("audit_webhook_failed_total", "Audit records not sent to the webhook receiver because it refused or failed every retry, or had not taken them when shutdown's bound passed."),
		wake:     make(chan struct{}, 1), stop: make(chan struct{}), done: make(chan struct{}),
	}
	w.ctx, w.cancel = context.WithCancel(context.Background())
	return w, nil
}

// Collectors returns the webhook's metrics for registration.
func (w *Webhook) Collectors() []prometheus.Collector {
	return []prometheus.Collector{w.sent, w.overflow, w.failed}
}

// fullError says the buffer is full, naming the receiver.
func (w *Webhook) fullError() error {
	return fmt.Errorf("audit webhook %s: buffer of %d records full; the receiver is not keeping up", w.url, w.o.BufferSize)
}

// Record queues a copy of line; it fits Options.OnRecord. It never waits:
// a full buffer drops the record from the webhook (the log file keeps it),
// counts it and logs, at most once per overflowLogInterval.
func (w *Webhook) Record(_ uint64, line []byte) {
	line = bytes.TrimSuffix(line, []byte("\n"))
	w.mu.Lock()
	if w.closed {
		w.mu.Unlock()
		w.failed.Inc()
		return
	}
	if len(w.queue) >= w.o.BufferSize {
		w.dropped++
		var report int
		if now := time.Now(); now.Sub(w.loggedAt) >= overflowLogInterval {
			report, w.dropped, w.loggedAt = w.dropped, 0, now
		}
		w.mu.Unlock()
		w.overflow.Inc()
		if report > 0 {
			w.o.Log.Error(w.fullError(), "audit records dropped from the webhook; the log file keeps them", "dropped", report, "logEvery", overflowLogInterval.String())
		}
		return
	}
	w.queue = append(w.queue, bytes.Clone(line))
	full := len(w.queue) >= w.o.BatchMaxSize
	w.mu.Unlock()
	if full {
		w.wakeSender()
	}
}

// Admit fits Options.Admit. In Block mode it refuses, at once, a record
// that would find the buffer full once the ahead records written before
// it are queued; otherwise it admits every record.
func (w *Webhook) Admit(_ *Event, ahead int) error {
	if !w.o.Block {
		return nil
	}
	w.mu.Lock()
	full := w.closed || len(w.queue)+ahead >= w.o.BufferSize
	w.mu.Unlock()
	if full {
		return fmt.Errorf("%w, and in blocking mode requests are refused until it catches up", w.fullError())
	}
	return nil
}

func (w *Webhook) wakeSender() {
	select {
	case w.wake <- struct{}{}:
	default:
	}
}

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
			if !w.send(batch) {
				w.drain(batch)
				return
			}
		}
		t.Reset(w.o.BatchMaxWait)
	}
}

// take removes up to one batch from the queue.
func (w *Webhook) take() [][]byte {
	w.mu.Lock()
	defer w.mu.Unlock()
	n := min(len(w.queue), w.o.BatchMaxSize)
	batch := w.queue[:n:n]
	w.queue = w.queue[n:]
	return batch
}

// send posts a batch, retrying with exponential backoff. It reports
// false, the batch unsent, when Stop interrupts a wait between attempts.
func (w *Webhook) send(batch [][]byte) bool {
	backoff := w.o.InitialBackoff
	var err error
	for attempt := 0; attempt <= w.o.Retries; attempt++ {
		if attempt > 0 {
			t := time.NewTimer(backoff)
			select {
			case <-w.stop:
				t.Stop()
				return false
			case <-t.C:
			}
			backoff *= 2
		}
		if err = w.post(batch); err == nil {
			w.sent.Add(float64(len(batch)))
			return true
		}
		if attempt < w.o.Retries {
			w.o.Log.Error(err, "sending audit records to the webhook receiver failed; retrying", "records", len(batch), "attempt", attempt+1, "retryIn", backoff.String())
		}
	}
	w.failed.Add(float64(len(batch)))
	w.o.Log.Error(err, "audit records not sent to the webhook receiver after every retry; the log file keeps them", "records", len(batch), "retries", w.o.Retries)
	return true
}

// drain sends, at shutdown, batch (one an interrupted send left) and then
// the queue, one attempt per batch, and stops at the first failure; what
// is left then, and any record after it, is counted as failed.
func (w *Webhook) drain(batch [][]byte) {
	var err error
	for {
		if len(batch) == 0 {
			batch = w.take()
		}
		if len(batch) == 0 {
			break
		}
		if err = w.post(batch); err != nil {
			break
		}
		w.sent.Add(float64(len(batch)))
		batch = nil
	}
	w.mu.Lock()
	w.closed = true
	left := len(batch) + len(w.queue)
	w.queue = nil
	dropped := w.dropped
	w.mu.Unlock()
	if left > 0 {
		w.failed.Add(float64(left))
		w.o.Log.Error(err, "audit records not sent to the webhook receiver at shutdown; the log file keeps them", "records", left)
	}
	if dropped > 0 {
		w.o.Log.Error(w.fullError(), "audit records dropped from the webhook; the log file keeps them", "dropped", dropped)
	}
}

// EventListHeader and EventListFooter frame a batch: the records are the
// items, byte for byte as in the file, so that a receiver that saves the
// body keeps a chain that verifies.
const (
	eventListHeader = `{"kind":"EventList","apiVersion":"audit.k8s.io/v1","metadata":{},"items":[`
	eventListFooter = "]}\n"
)

// post sends one batch, within RequestTimeout and before Stop's bound.
func (w *Webhook) post(batch [][]byte) error {
	var body bytes.Buffer
	body.WriteString(eventListHeader)
	for i, line := range batch {
		if i > 0 {
			body.WriteByte(',')
		}
		body.Write(line)
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
			return fmt.Errorf("audit webhook receiver %s answered %s: %s", w.url, resp.Status, bytes.TrimSpace(msg))
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
