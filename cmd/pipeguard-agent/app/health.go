package app

// The health probe endpoint: /readyz and /healthz in plain HTTP, for the
// kubelet's readiness and liveness probes, as controller-runtime managers
// serve them. Probes carry no token, so the answers name the check that
// failed and nothing else: no path, no error text.

import (
	"context"
	"errors"
	"fmt"
	stdlog "log"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-logr/logr"
)

// healthCheckTimeout bounds how long a probe waits for the audit log's
// lock: past it, a write is taken to be stuck.
const healthCheckTimeout = time.Second

// healthShutdownTimeout bounds the end of a probe in flight once the agent
// has shut down.
const healthShutdownTimeout = 2 * time.Second

// healthEnabled reports whether addr asks for a health probe endpoint.
func healthEnabled(addr string) bool { return addr != "" && addr != "0" }

// auditState is what the probes ask of the audit log (*audit.Log).
type auditState interface {
	Path() string
	// Writable is nil while the log accepts records; it waits for the
	// log's lock.
	Writable() error
}

// health answers the probes from the agent's state.
type health struct {
	audit   auditState // nil: requests are not audited
	timeout time.Duration

	listening atomic.Bool // every pipe or socket is open
	stopping  atomic.Bool // shutdown has begun

	log logr.Logger

	mu          sync.Mutex
	running     *auditCheck       // the audit check in progress, if any
	lastFailure map[string]string // by probe, the answer of the last failure logged; "": none
}

// auditCheck is one call of Writable; err is set before done is closed.
type auditCheck struct {
	done chan struct{}
	err  error
}

func newHealth(a auditState, log logr.Logger) *health {
	return &health{audit: a, timeout: healthCheckTimeout, log: log}
}

// errAuditStuck is an audit check that did not end within the timeout.
var errAuditStuck = errors.New("stuck")

// checkAudit asks the audit log whether it accepts records, waiting at
// most h.timeout (or until ctx is done). It returns the log's answer, or
// errAuditStuck when the log's lock was not free in time. A probe that
// comes while a check is still waiting for the lock joins it, so a stuck
// log holds one goroutine, not one per probe.
func (h *health) checkAudit(ctx context.Context) (writable error, stuck bool) {
	if h.audit == nil {
		return nil, false
	}
	h.mu.Lock()
	c := h.running
	if c == nil {
		c = &auditCheck{done: make(chan struct{})}
		h.running = c
		go func() {
			c.err = h.audit.Writable()
			h.mu.Lock()
			h.running = nil
			h.mu.Unlock()
			close(c.done)
		}()
	}
	h.mu.Unlock()
	timer := time.NewTimer(h.timeout)
	defer timer.Stop()
	select {
	case <-c.done:
		return c.err, false
	case <-timer.C:
	case <-ctx.Done():
	}
	return nil, true
}

// The answers of failed probes: which check failed, in fixed words. The
// probes are unauthenticated, so the audit log's path and the error go to
// the agent's log (see logFailure), never into the answer.
const (
	answerShuttingDown     = "shutting down"
	answerPipesNotServing  = "not ready: pipes not serving"
	answerAuditNotWritable = "not ready: audit log not writable"
	answerAuditStuck       = "not ready: audit log stuck"
	answerLiveAuditStuck   = "audit log stuck"
)

// readyz answers 200 "ok" once every pipe or socket is listening and the
// audit log accepts records; 503 with the failed check otherwise, and 503
// "shutting down" once shutdown has begun.
func (h *health) readyz(w http.ResponseWriter, r *http.Request) {
	if h.stopping.Load() {
		probeAnswer(w, http.StatusServiceUnavailable, answerShuttingDown)
		return
	}
	if !h.listening.Load() {
		probeAnswer(w, http.StatusServiceUnavailable, answerPipesNotServing)
		return
	}
	if err, stuck := h.checkAudit(r.Context()); stuck {
		h.logFailure("readyz", answerAuditStuck, fmt.Errorf("the audit log's lock was not free within %s: a write is stuck", h.timeout))
		probeAnswer(w, http.StatusServiceUnavailable, answerAuditStuck)
		return
	} else if err != nil {
		h.logFailure("readyz", answerAuditNotWritable, err)
		probeAnswer(w, http.StatusServiceUnavailable, answerAuditNotWritable)
		return
	}
	if h.stopping.Load() {
		probeAnswer(w, http.StatusServiceUnavailable, answerShuttingDown)
		return
	}
	h.logFailure("readyz", "", nil)
	probeAnswer(w, http.StatusOK, "ok")
}

// healthz answers 200 "ok" while the agent is not wedged: the audit log's
// lock, which every audited request takes, is free within h.timeout.
// Otherwise 503 "audit log stuck", so that the kubelet restarts the agent.
// An audit log that refuses records is a matter for readyz: the agent
// still answers, and a restart would not make the disk writable.
func (h *health) healthz(w http.ResponseWriter, r *http.Request) {
	if _, stuck := h.checkAudit(r.Context()); stuck {
		h.logFailure("healthz", answerLiveAuditStuck, fmt.Errorf("the audit log's lock was not free within %s: a write is stuck; the kubelet restarts the agent after its liveness probe's failure threshold", h.timeout))
		probeAnswer(w, http.StatusServiceUnavailable, answerLiveAuditStuck)
		return
	}
	h.logFailure("healthz", "", nil)
	probeAnswer(w, http.StatusOK, "ok")
}

// logFailure logs the details of a failed check of probe, with the audit
// log's path, when answer differs from the last one logged for probe, so
// that a probe every few seconds (or a flood of them) logs each change
// once. An empty answer is a passing check, which ends the last failure.
func (h *health) logFailure(probe, answer string, err error) {
	h.mu.Lock()
	if h.lastFailure == nil {
		h.lastFailure = map[string]string{}
	}
	changed := h.lastFailure[probe] != answer
	h.lastFailure[probe] = answer
	h.mu.Unlock()
	if !changed {
		return
	}
	if answer == "" {
		h.log.Info("health probe passes again", "probe", probe)
		return
	}
	var path string
	if h.audit != nil {
		path = h.audit.Path()
	}
	h.log.Error(err, "health probe failed", "probe", probe, "answer", answer, "auditLogPath", path)
}

func probeAnswer(w http.ResponseWriter, code int, body string) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(code)
	_, _ = fmt.Fprint(w, body)
}

// handler serves /readyz and /healthz, and nothing else.
func (h *health) handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /readyz", h.readyz)
	mux.HandleFunc("GET /healthz", h.healthz)
	return mux
}

// healthEndpoint is the listener of the probes, opened by Listen, and
// their server, which Serve runs.
type healthEndpoint struct {
	listener *countingListener
	server   *http.Server
}

// listenHealth opens the health probe endpoint at addr, within b.
func listenHealth(ctx context.Context, addr string, b portBounds, h *health, log logr.Logger) (*healthEndpoint, error) {
	var lc net.ListenConfig
	l, err := lc.Listen(ctx, "tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("health probes: listening on %s: %w", addr, err)
	}
	return &healthEndpoint{listener: b.limit(l), server: b.server(h.handler(), stdlog.New(healthLogWriter{log}, "", 0))}, nil
}

// Addr is where the endpoint listens.
func (e *healthEndpoint) Addr() string { return e.listener.Addr().String() }

// serve serves the probes until stop is closed, then lets a probe in
// flight finish.
func (e *healthEndpoint) serve(stop <-chan struct{}, log logr.Logger) error {
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		<-stop
		ctx, cancel := context.WithTimeout(context.Background(), healthShutdownTimeout)
		defer cancel()
		_ = e.server.Shutdown(ctx)
	}()
	log.Info("serving health probes", "readyz", "http://"+e.Addr()+"/readyz", "healthz", "http://"+e.Addr()+"/healthz")
	err := e.server.Serve(e.listener)
	if errors.Is(err, http.ErrServerClosed) {
		<-stopped
		return nil
	}
	return fmt.Errorf("health probes: %w", err)
}

// healthLogWriter writes the lines of the probe server's logger to log at
// V(1).
type healthLogWriter struct{ log logr.Logger }

func (w healthLogWriter) Write(p []byte) (int, error) {
	w.log.V(1).Info("health probe server", "error", strings.TrimSpace(string(p)))
	return len(p), nil
}
