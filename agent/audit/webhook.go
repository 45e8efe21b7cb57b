package audit

import (
	"bytes"
	"context"
	"fmt"
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
	DefaultWebhookBatchMaxSize = 400
	// DefaultWebhookBatchMaxBytes bounds the records of one request, as
	// kube-apiserver bounds a request body by default (3 MiB). A record
	// larger than it goes alone.
	DefaultWebhookBatchMaxBytes = 3 << 20
	DefaultWebhookBatchMaxWait  = 30 * time.Second
	DefaultWebhookBufferSize    = 10000
	// DefaultWebhookBufferBytes bounds the bytes of the records waiting
	// for the receiver or in flight to it.
	DefaultWebhookBufferBytes    = 64 << 20
	DefaultWebhookInitialBackoff = 10 * time.Second
	DefaultWebhookRetries        = 5
	// DefaultWebhookRequestTimeout bounds one request to the receiver, so
	// that a receiver that accepts and never answers holds the sender no
	// longer than that.
	DefaultWebhookRequestTimeout = 10 * time.Second
	// WebhookShutdownTimeout bounds Stop: what the receiver has not taken
	// by then is counted and logged as not sent.
	WebhookShutdownTimeout = 10 * time.Second
	// WebhookCallerShare is, in blocking mode, the part of the buffer
	// (records and bytes) one caller's records may hold: 1/WebhookCallerShare.
	// A caller past its share is refused; the others go on.
	WebhookCallerShare = 4
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
	// BatchMaxSize records and BatchMaxBytes bytes of records at most per
	// request (a record larger than BatchMaxBytes goes alone);
	// BatchMaxWait is how long a record waits for a batch to fill.
	BatchMaxSize  int
	BatchMaxBytes int
	BatchMaxWait  time.Duration
	// BufferSize records and BufferBytes bytes bound the records waiting
	// to be sent or in flight; records beyond either are dropped from the
	// webhook, counted and logged.
	BufferSize  int
	BufferBytes int64
	// Block refuses requests rather than let their records miss the
	// webhook: with the buffer full, or the caller's share of it
	// (1/WebhookCallerShare), Admit fails at once with an error naming
	// what is full, and the log writes the request's denial in place of
	// its record (see Options.Admit). Nothing ever waits for room.
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

// item is a record waiting for the receiver.
type item struct {
	seq    uint64
	line   []byte
	caller string // its caller's key in blocking mode, "" if none
}

// Webhook sends every record, exactly as written to the file, to a
// receiver as audit.k8s.io/v1 EventList batches, off the request path:
// Record and Admit take a short lock of their own and never wait for the
// receiver.
//
// A batch the receiver refuses as a client error (a 4xx but 408 and 429,
// such as 413 for a body too large) is split in halves, each sent on its
// own, down to the single records it refuses: each of those is reported
// by itself (log line, pipeguard_agent_audit_webhook_rejected_total and,
// once ReportTo names the log, a checkpoint naming its seq), and every
// other record of the batch is sent.
type Webhook struct {
	o      WebhookOptions
	url    string
	client *http.Client
	// ctx ends the requests in flight once Stop's bound has passed.
	ctx    context.Context
	cancel context.CancelFunc

	// mu guards the fields below; it is never held while waiting, nor
	// while calling the log.
	mu       sync.Mutex
	queue    []item
	buffered int   // records queued or in flight
	qbytes   int64 // bytes of the records queued, not in flight
	bytes    int64 // their bytes
	closed   bool  // the sender has ended; later records are not sent
	dropped  int   // records dropped since the last overflow log line
	// droppedBytes: some of them for the buffer's bytes
	droppedBytes bool
	loggedAt     time.Time
	// Blocking mode: the records and bytes each caller holds in the
	// buffer (reserved by Admit, queued or in flight), and the caller of
	// each admitted record not yet seen by Record.
	callers  map[string]*share
	admitted map[uint64]admission
	lastSeq  uint64 // of the last record seen by Record
	unsent   unsentSet
	// note writes a checkpoint to the log (ReportTo); notes are the
	// sequence numbers of those checkpoints, never reported again.
	note  func(map[string]string) (uint64, error)
	notes map[uint64]bool

	sent, overflow, failed, rejected, prunedUnsent prometheus.Counter
	bufferedBytes                                  prometheus.GaugeFunc
	wake, stop, done                               chan struct{}
	startOnce, stopOnce                            sync.Once
}

// checkpointURI is in every checkpoint's line, and in no other record's
// outside a JSON string.
var checkpointURI = []byte(`"requestURI":"pipeguard:checkpoint"`)

// admission is the caller of a record Admit or Attribute saw, not yet
// seen by Record; deny marks the denial of a request refused for its
// caller's share, which is not queued either.
type admission struct {
	caller string
	deny   bool
}

// share is what one caller holds in the buffer.
type share struct {
	records int
	bytes   int64
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
	if o.BatchMaxBytes <= 0 {
		o.BatchMaxBytes = DefaultWebhookBatchMaxBytes
	}
	if o.BatchMaxWait <= 0 {
		o.BatchMaxWait = DefaultWebhookBatchMaxWait
	}
	if o.BufferSize <= 0 {
		o.BufferSize = DefaultWebhookBufferSize
	}
	if o.BufferBytes <= 0 {
		o.BufferBytes = DefaultWebhookBufferBytes
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
		callers: map[string]*share{}, admitted: map[uint64]admission{}, notes: map[uint64]bool{},
		sent:         counter("audit_webhook_sent_total", "Audit records the webhook receiver accepted."),
		overflow:     counter("audit_webhook_overflow_total", "Audit records not sent to the webhook receiver because its buffer was full."),
		failed:       counter("audit_webhook_failed_total", "Audit records not sent to the webhook receiver because it failed every retry, or had not taken them when shutdown's bound passed."),
		rejected:     counter("audit_webhook_rejected_total", "Audit records the webhook receiver refused one by one (a 4xx answer to the record alone); each is logged with its seq and named by a checkpoint in the log."),
		prunedUnsent: counter("audit_webhook_unsent_pruned_total", "Audit records removed by rotation although the webhook receiver never acknowledged them, because the files held for it passed their byte limit."),
		wake:         make(chan struct{}, 1), stop: make(chan struct{}), done: make(chan struct{}),
	}
	w.bufferedBytes = prometheus.NewGaugeFunc(prometheus.GaugeOpts{Namespace: "pipeguard", Subsystem: "agent", Name: "audit_webhook_buffered_bytes",
		Help: "Bytes of audit records waiting for the webhook receiver or in flight to it."}, func() float64 { return float64(w.BufferedBytes()) })
	w.ctx, w.cancel = context.WithCancel(context.Background())
	return w, nil
}

// Collectors returns the webhook's metrics for registration.
func (w *Webhook) Collectors() []prometheus.Collector {
	return []prometheus.Collector{w.sent, w.overflow, w.failed, w.rejected, w.prunedUnsent, w.bufferedBytes}
}

// BufferedBytes is the bytes of the records waiting for the receiver or
// in flight to it, at most BufferBytes.
func (w *Webhook) BufferedBytes() int64 {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.bytes
}

// ReportTo names the log in which the webhook writes a checkpoint for
// each record its receiver refuses on its own; call it once the log is
// open, before records can be refused.
func (w *Webhook) ReportTo(l *Log) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.note = l.Checkpoint
}

// fullError says the buffer is full, naming the receiver and which of
// its bounds was reached.
func (w *Webhook) fullError(bytesFull bool) error {
	if bytesFull {
		return fmt.Errorf("audit webhook %s: buffer of %d bytes full; the receiver is not keeping up", w.url, w.o.BufferBytes)
	}
	return fmt.Errorf("audit webhook %s: buffer of %d records full; the receiver is not keeping up", w.url, w.o.BufferSize)
}

// Record queues a copy of line; it fits Options.OnRecord. It never waits:
// a full buffer drops the record from the webhook (the log file keeps it,
// and rotation keeps the file while the receiver has not acknowledged it,
// see Unsent), counts it and logs, at most once per overflowLogInterval.
func (w *Webhook) Record(seq uint64, line []byte) {
	line = bytes.TrimSuffix(line, []byte("\n"))
	w.mu.Lock()
	adm, attributed := w.admitted[seq]
	caller := adm.caller
	w.settleAdmitted(seq)
	w.lastSeq = seq
	w.unsent.add(seq)
	if adm.deny && !bytes.Contains(line, checkpointURI) {
		// The denial of a caller past its share (not a rotation's
		// checkpoint written before it): the file keeps it; it takes no
		// room the other callers need.
		w.mu.Unlock()
		w.overflow.Inc()
		return
	}
	if w.closed {
		w.unreserve(caller, 0)
		w.mu.Unlock()
		w.failed.Inc()
		return
	}
	size := int64(len(line))
	if bytesFull := w.bytes+size > w.o.BufferBytes; bytesFull || w.buffered >= w.o.BufferSize {
		w.unreserve(caller, 0)
		w.dropped++
		w.droppedBytes = w.droppedBytes || bytesFull
		var report int
		var reportBytes bool
		if now := time.Now(); now.Sub(w.loggedAt) >= overflowLogInterval {
			report, reportBytes, w.dropped, w.droppedBytes, w.loggedAt = w.dropped, w.droppedBytes, 0, false, now
		}
		w.mu.Unlock()
		w.overflow.Inc()
		if report > 0 {
			w.o.Log.Error(w.fullError(reportBytes), "audit records dropped from the webhook; the log file keeps them", "dropped", report, "logEvery", overflowLogInterval.String(), "seq", seq)
		}
		return
	}
	if sh := w.callers[caller]; attributed && sh != nil {
		sh.bytes += size
	}
	w.queue = append(w.queue, item{seq: seq, line: bytes.Clone(line), caller: caller})
	w.buffered++
	w.bytes += size
	w.qbytes += size
	full := len(w.queue) >= w.o.BatchMaxSize || w.qbytes >= int64(w.o.BatchMaxBytes)
	w.mu.Unlock()
	if full {
		w.wakeSender()
	}
}
