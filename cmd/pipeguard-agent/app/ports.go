package app

// The bounds of the agent's two HTTP ports, the probes and /metrics. Any
// process that reaches a port can open connections to it; without a cap
// and timeouts, idle or slow connections would hold one file descriptor
// each until the agent had none left for its pipes. Past the cap the
// agent accepts no more connections: the others wait in the kernel's
// backlog, not in the agent, until one of the open ones ends.

import (
	"log"
	"net"
	"net/http"
	"sync"
	"time"

	"golang.org/x/net/netutil"
)

const (
	// probeMaxConnections caps the probe port's open connections: the
	// kubelet opens one per probe (readiness and liveness) and closes it.
	probeMaxConnections = 8
	// probeReadHeaderTimeout bounds the wait for a probe's request line
	// and headers, so a slow sender frees its connection.
	probeReadHeaderTimeout = 2 * time.Second
	// probeReadTimeout bounds the whole request; probes have no body.
	probeReadTimeout = 2 * time.Second
	// probeWriteTimeout bounds the answer: the check waits at most
	// healthCheckTimeout for the audit log, well within it.
	probeWriteTimeout = 5 * time.Second
	// probeIdleTimeout closes a kept-alive probe connection that sends
	// no next request; the kubelet does not reuse its probe connections.
	probeIdleTimeout = 5 * time.Second

	// metricsMaxConnections caps the metrics port's open connections: a
	// few scrapers (Prometheus replicas), each with one connection.
	metricsMaxConnections = 4
	// metricsReadHeaderTimeout bounds the wait for a scrape's request
	// line and headers, and the TLS handshake before them.
	metricsReadHeaderTimeout = 5 * time.Second
	// metricsReadTimeout bounds the whole request; scrapes have no body.
	metricsReadTimeout = 5 * time.Second
	// metricsWriteTimeout bounds a scrape's answer, the reviews of its
	// token by the API server included; Prometheus gives up after 10s
	// by default.
	metricsWriteTimeout = 30 * time.Second
	// metricsIdleTimeout closes a scraper's kept-alive connection when no
	// scrape comes within it; a scraper every 15 or 30 seconds keeps its
	// connection, one that scrapes less often opens a new one.
	metricsIdleTimeout = 60 * time.Second

	// portMaxHeaderBytes bounds the request headers on both ports: a
	// probe's or a scrape's are a few hundred bytes. net/http reads 4 KiB
	// beyond it before it answers 431.
	portMaxHeaderBytes = 8 << 10
)

// portBounds are the bounds of one HTTP port.
type portBounds struct {
	MaxConnections    int
	ReadHeaderTimeout time.Duration
	ReadTimeout       time.Duration
	WriteTimeout      time.Duration
	IdleTimeout       time.Duration
}

// httpBounds are the bounds of both ports; tests shorten the timeouts.
type httpBounds struct {
	Probes, Metrics portBounds
}

// defaultHTTPBounds are the bounds the agent serves with.
func defaultHTTPBounds() httpBounds {
	return httpBounds{
		Probes: portBounds{
			MaxConnections:    probeMaxConnections,
			ReadHeaderTimeout: probeReadHeaderTimeout,
			ReadTimeout:       probeReadTimeout,
			WriteTimeout:      probeWriteTimeout,
			IdleTimeout:       probeIdleTimeout,
		},
		Metrics: portBounds{
			MaxConnections:    metricsMaxConnections,
			ReadHeaderTimeout: metricsReadHeaderTimeout,
			ReadTimeout:       metricsReadTimeout,
			WriteTimeout:      metricsWriteTimeout,
			IdleTimeout:       metricsIdleTimeout,
		},
	}
}

// bounds are the bounds the agent's ports are served with.
func (a *Agent) bounds() httpBounds {
	if a.opts.httpBounds != nil {
		return *a.opts.httpBounds
	}
	return defaultHTTPBounds()
}

// server is an http.Server serving h within b, its own errors going to
// errorLog.
func (b portBounds) server(h http.Handler, errorLog *log.Logger) *http.Server {
	return &http.Server{
		Handler:           h,
		ReadHeaderTimeout: b.ReadHeaderTimeout,
		ReadTimeout:       b.ReadTimeout,
		WriteTimeout:      b.WriteTimeout,
		IdleTimeout:       b.IdleTimeout,
		MaxHeaderBytes:    portMaxHeaderBytes,
		ErrorLog:          errorLog,
	}
}

// limit caps the connections l accepts at b.MaxConnections and counts
// those open. It wraps the TCP listener itself, below TLS, so that a
// connection stuck in its handshake holds a place too.
func (b portBounds) limit(l net.Listener) *countingListener {
	return &countingListener{Listener: netutil.LimitListener(l, b.MaxConnections)}
}

// countingListener counts the connections accepted and not yet closed,
// and the most ever open at once. A connection leaves the count before
// its place under the cap is freed, so the count never exceeds the cap.
type countingListener struct {
	net.Listener
	mu         sync.Mutex
	open, peak int
}

func (l *countingListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	l.mu.Lock()
	l.open++
	l.peak = max(l.peak, l.open)
	l.mu.Unlock()
	return &countedConn{Conn: c, l: l}, nil
}

// counts returns the connections open now and the most ever open at once.
func (l *countingListener) counts() (open, peak int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.open, l.peak
}

type countedConn struct {
	net.Conn
	l    *countingListener
	once sync.Once
}

func (c *countedConn) Close() error {
	c.once.Do(func() {
		c.l.mu.Lock()
		c.l.open--
		c.l.mu.Unlock()
	})
	return c.Conn.Close()
}
