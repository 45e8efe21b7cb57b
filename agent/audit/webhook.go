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
)

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
	// are dropped, counted and logged, unless Block.
	BufferSize int
	// Block makes a record wait for room in a full buffer instead of being
	// dropped, and with it the request that writes it: what
	// --audit-failure=deny asks for.
	Block bool
	// InitialBackoff is the wait before the first retry of a failed batch;
	// it doubles for each of at most Retries retries (0: the default,
	// negative: none).
	InitialBackoff time.Duration
	Retries        int
	Log            logr.Logger
}

// Webhook sends every record, exactly as written to the file, to a
// receiver as audit.k8s.io/v1 EventList batches, off the request path: its
// Record never blocks and never fails the request.
type Webhook struct {
	o      WebhookOptions
	url    string
	client *http.Client

	mu      sync.Mutex
	room    *sync.Cond // on mu: the queue shrank or the webhook stopped
	stopped bool
	queue   [][]byte
	wake    chan struct{}
	dropped uint64 // since the last overflow log line

	sent, overflow, failed prometheus.Counter
	done                   chan struct{}
	stop                   chan struct{}
	stopOnce               sync.Once
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
		o: o, url: cfg.Host, client: client, wake: make(chan struct{}, 1),
		sent:     counter("audit_webhook_sent_total", "Audit records the webhook receiver accepted."),
		overflow: counter("audit_webhook_overflow_total", "Audit records not sent to the webhook receiver because its buffer was full."),
		failed:   counter("audit_webhook_failed_total", "Audit records not sent to the webhook receiver because it refused or failed every retry."),
		done:     make(chan struct{}), stop: make(chan struct{}),
	}
	w.room = sync.NewCond(&w.mu)
	return w, nil
}

// Collectors returns the webhook's metrics for registration.
func (w *Webhook) Collectors() []prometheus.Collector {
	return []prometheus.Collector{w.sent, w.overflow, w.failed}
}

// Record queues a copy of line; it fits Options.OnRecord. A full buffer
// drops the record, counts it and logs (once per run of drops), or with
// Block waits for room until the webhook stops.
func (w *Webhook) Record(_ uint64, line []byte) {
	w.mu.Lock()
	for w.o.Block && len(w.queue) >= w.o.BufferSize && !w.stopped {
		w.wakeSender()
		w.room.Wait()
	}
	if len(w.queue) >= w.o.BufferSize {
		w.dropped++
		first := w.dropped == 1
		w.mu.Unlock()
		w.overflow.Inc()
		if first {
			w.o.Log.Error(errors.New("buffer full"), "audit records are being dropped from the webhook backend; the log file keeps them", "bufferSize", w.o.BufferSize, "receiver", w.url)
		}
		return
	}
	if w.dropped > 0 {
		w.o.Log.Info("the audit webhook backend accepts records again", "dropped", w.dropped)
		w.dropped = 0
	}
	w.queue = append(w.queue, bytes.TrimSuffix(bytes.Clone(line), []byte("\n")))
	full := len(w.queue) >= w.o.BatchMaxSize
	w.mu.Unlock()
	if full {
		w.wakeSender()
	}
}

func (w *Webhook) wakeSender() {
	select {
	case w.wake <- struct{}{}:
	default:
	}
}

// Start sends batches in the background until Stop. Stop must not be
// called without Start.
func (w *Webhook) Start() { go w.run() }

// Stop sends what is queued (one attempt per batch, bounded by ctx) and
// ends the background sender.
func (w *Webhook) Stop(ctx context.Context) {
	w.stopOnce.Do(func() {
		close(w.stop)
		w.mu.Lock()
		w.stopped = true
		w.room.Broadcast()
		w.mu.Unlock()
	})
	<-w.done
	for {
		batch := w.take()
		if len(batch) == 0 {
			return
		}
		if err := w.post(ctx, batch); err != nil {
			w.failed.Add(float64(len(batch)))
			w.o.Log.Error(err, "audit records not sent to the webhook receiver at shutdown", "records", len(batch))
			return
		}
		w.sent.Add(float64(len(batch)))
	}
}

func (w *Webhook) run() {
	defer close(w.done)
	t := time.NewTimer(w.o.BatchMaxWait)
	defer t.Stop()
	for {
		select {
		case <-w.stop:
			return
		case <-w.wake:
		case <-t.C:
		}
		for batch := w.take(); len(batch) > 0; batch = w.take() {
			if !w.send(batch) {
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
	if n > 0 {
		w.room.Broadcast()
	}
	return batch
}

// send posts a batch, retrying with exponential backoff. It reports false
// when Stop interrupted it; the batch is then counted as failed.
func (w *Webhook) send(batch [][]byte) bool {
	backoff := w.o.InitialBackoff
	var err error
	for attempt := 0; attempt <= w.o.Retries; attempt++ {
		if attempt > 0 {
			select {
			case <-w.stop:
				w.failed.Add(float64(len(batch)))
				w.o.Log.Error(err, "audit records not sent to the webhook receiver: stopping", "records", len(batch))
				return false
			case <-time.After(backoff):
			}
			backoff *= 2
		}
		ctx, cancel := context.WithTimeout(context.Background(), w.o.BatchMaxWait+30*time.Second)
		err = w.post(ctx, batch)
		cancel()
		if err == nil {
			w.sent.Add(float64(len(batch)))
			return true
		}
		w.o.Log.Error(err, "sending audit records to the webhook receiver failed; retrying", "records", len(batch), "attempt", attempt+1)
	}
	w.failed.Add(float64(len(batch)))
	w.o.Log.Error(err, "audit records not sent to the webhook receiver after every retry; the log file keeps them", "records", len(batch), "retries", w.o.Retries)
	return true
}

// EventListHeader and EventListFooter frame a batch: the records are the
// items, byte for byte as in the file, so that a receiver that saves the
// body keeps a chain that verifies.
const (
	eventListHeader = `{"kind":"EventList","apiVersion":"audit.k8s.io/v1","metadata":{},"items":[`
	eventListFooter = "]}\n"
)

func (w *Webhook) post(ctx context.Context, batch [][]byte) error {
	var body bytes.Buffer
	body.WriteString(eventListHeader)
	for i, line := range batch {
		if i > 0 {
			body.WriteByte(',')
		}
		body.Write(line)
	}
	body.WriteString(eventListFooter)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, w.url, &body)
	if err != nil {
		return fmt.Errorf("audit webhook receiver %s: %w", w.url, err)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := w.client.Do(req)
	if err != nil {
		return fmt.Errorf("audit webhook receiver %s: %w", w.url, err)
	}
	defer resp.Body.Close()
	msg, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("audit webhook receiver %s answered %s: %s", w.url, resp.Status, bytes.TrimSpace(msg))
	}
	return nil
}
