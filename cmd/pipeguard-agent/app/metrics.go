package app

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	stdlog "log"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	certutil "k8s.io/client-go/util/cert"
	"sigs.k8s.io/controller-runtime/pkg/certwatcher"

	"github.com/pipeguard/pipeguard/internal/metricsauth"
)

// The files MetricsCertDir may hold, as cert-manager and kubebuilder name them.
const (
	metricsCertFile = "tls.crt"
	metricsKeyFile  = "tls.key"
)

// metricsShutdownTimeout bounds the end of a scrape in flight at shutdown.
const metricsShutdownTimeout = 5 * time.Second

// metricsEnabled reports whether addr asks for a metrics endpoint.
func metricsEnabled(addr string) bool { return addr != "" && addr != "0" }

// validateMetrics checks the metrics options New can check without
// listening.
func validateMetrics(o Options) error {
	if !metricsEnabled(o.MetricsBindAddress) {
		return nil
	}
	if o.MetricsSecure && o.MetricsAuth == nil {
		return errors.New("secure metrics (MetricsSecure) need a connection to the API server (MetricsAuth), which reviews each scraper's token; " +
			"give the agent a kubeconfig, or turn secure metrics off for local use only")
	}
	if !o.MetricsSecure && o.MetricsCertDir != "" {
		return errors.New("MetricsCertDir is set but MetricsSecure is not: the certificate is used only with secure metrics")
	}
	return nil
}

// metricsEndpoint is the agent's /metrics: the listener, opened by Listen,
// and the handler that Serve serves on it.
type metricsEndpoint struct {
	listener net.Listener
	limited  *countingListener // below TLS, if any
	server   *http.Server
	watcher  *certwatcher.CertWatcher
	secure   bool
}

// listenMetrics opens the metrics endpoint of o, serving g. With
// MetricsSecure it serves HTTPS and passes every request through
// metricsAuth: the bearer token must pass a TokenReview and its user a
// SubjectAccessReview for get on the non-resource URL of the request
// (/metrics), as kubebuilder projects serve their metrics.
func listenMetrics(ctx context.Context, o Options, b portBounds, g prometheus.Gatherer) (*metricsEndpoint, error) {
	log := o.Log.WithName("metrics")
	var handler http.Handler = promhttp.HandlerFor(g, promhttp.HandlerOpts{ErrorHandling: promhttp.HTTPErrorOnError})
	e := &metricsEndpoint{secure: o.MetricsSecure}
	var tlsConfig *tls.Config
	if o.MetricsSecure {
		auth, err := metricsauth.New(o.MetricsAuth, log, metricsauth.Options{Component: "pipeguard-agent"})
		if err != nil {
			return nil, fmt.Errorf("secure metrics: %w", err)
		}
		handler = auth.Wrap(handler)
		if tlsConfig, e.watcher, err = metricsTLS(o.MetricsCertDir); err != nil {
			return nil, err
		}
	}
	var lc net.ListenConfig
	l, err := lc.Listen(ctx, "tcp", o.MetricsBindAddress)
	if err != nil {
		return nil, fmt.Errorf("metrics: listening on %s: %w", o.MetricsBindAddress, err)
	}
	e.limited = b.limit(l)
	l = e.limited
	if tlsConfig != nil {
		l = tls.NewListener(l, tlsConfig)
	}
	mux := http.NewServeMux()
	mux.Handle("/metrics", handler)
	e.listener = l
	// The server's own errors (TLS handshakes that fail, as a plain HTTP
	// request or a port scan makes them) go to the agent's log, verbose.
	e.server = b.server(mux, stdlog.New(logWriter{log}, "", 0))
	return e, nil
}

// metricsTLS returns the TLS configuration of the secure endpoint: the
// certificate in certDir (tls.crt, tls.key), reloaded when it changes, or
// a self-signed one made now when certDir is empty. HTTP/2 is off, as in
// kubebuilder's scaffold, against its stream-reset attacks; a scrape needs
// no more than HTTP/1.1.
func metricsTLS(certDir string) (*tls.Config, *certwatcher.CertWatcher, error) {
	cfg := &tls.Config{MinVersion: tls.VersionTLS12, NextProtos: []string{"http/1.1"}}
	if certDir != "" {
		cert, key := filepath.Join(certDir, metricsCertFile), filepath.Join(certDir, metricsKeyFile)
		for _, f := range []string{cert, key} {
			if _, err := os.Stat(f); err != nil {
				return nil, nil, fmt.Errorf("secure metrics: the metrics certificate directory %s must hold %s and %s: %w", certDir, metricsCertFile, metricsKeyFile, err)
			}
		}
		w, err := certwatcher.New(cert, key)
		if err != nil {
			return nil, nil, fmt.Errorf("secure metrics: loading the certificate in %s: %w", certDir, err)
		}
		cfg.GetCertificate = w.GetCertificate
		return cfg, w, nil
	}
	// A self-signed certificate encrypts the scrape, as kube-controller-manager's
	// and controller-runtime's metrics endpoints do by default; the scraper
	// is authenticated by its token, not the agent by its certificate.
	certPEM, keyPEM, err := certutil.GenerateSelfSignedCertKeyWithFixtures("localhost", []net.IP{net.IPv4(127, 0, 0, 1)}, nil, "")
	if err != nil {
		return nil, nil, fmt.Errorf("secure metrics: generating a self-signed certificate: %w", err)
	}
	pair, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		return nil, nil, fmt.Errorf("secure metrics: loading the self-signed certificate: %w", err)
	}
	cfg.Certificates = []tls.Certificate{pair}
	return cfg, nil, nil
}

// logWriter writes the lines of a standard library logger to log at V(1).
type logWriter struct{ log logr.Logger }

func (w logWriter) Write(p []byte) (int, error) {
	w.log.V(1).Info("metrics server", "error", strings.TrimSpace(string(p)))
	return len(p), nil
}

// Addr is where the endpoint listens.
func (e *metricsEndpoint) Addr() string { return e.listener.Addr().String() }

// serve serves until ctx is done, then lets a scrape in flight finish.
func (e *metricsEndpoint) serve(ctx context.Context, log logr.Logger) error {
	if e.watcher != nil {
		go func() {
			if err := e.watcher.Start(ctx); err != nil {
				log.Error(err, "the metrics certificate is no longer reloaded when it changes; restart the agent after replacing it")
			}
		}()
	}
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		<-ctx.Done()
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), metricsShutdownTimeout)
		defer cancel()
		_ = e.server.Shutdown(sctx)
	}()
	scheme := "http"
	if e.secure {
		scheme = "https"
	}
	log.Info("serving metrics", "url", scheme+"://"+e.Addr()+"/metrics", "authenticated", e.secure)
	if !e.secure && !loopback(e.Addr()) {
		log.Info("WARNING: metrics are served in plain HTTP without authentication on a non-loopback address; anyone who reaches it can read them. Use --metrics-secure outside local runs")
	}
	err := e.server.Serve(e.listener)
	if errors.Is(err, http.ErrServerClosed) {
		<-stopped
		return nil
	}
	return fmt.Errorf("metrics: %w", err)
}

// loopback reports whether addr (host:port) is on a loopback address only.
func loopback(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	ip := net.ParseIP(host)
	return host == "localhost" || (ip != nil && ip.IsLoopback())
}

// listingSkips logs and counts the entries the host listings leave out
// because the host's answer for them could not be read: a disk of
// ListDiskLocations or ListDiskIDs, a volume of ListVolumesOnDisk.
type listingSkips struct {
	log     logr.Logger
	skipped *prometheus.CounterVec
}

// The listings that leave out what they cannot read, by group.
var skippingListings = [][2]string{{"disk", "ListDiskLocations"}, {"disk", "ListDiskIDs"}, {"volume", "ListVolumesOnDisk"}}

// newListingSkips registers pipeguard_agent_host_listing_skipped_total on
// reg (none when reg is nil), each listing's series at 0.
func newListingSkips(reg prometheus.Registerer, log logr.Logger) (*listingSkips, error) {
	c := prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: "pipeguard", Subsystem: "agent", Name: "host_listing_skipped_total",
		Help: "Entries a host listing left out because the host's answer for them could not be read (a disk, a volume), by group and listing.",
	}, []string{"group", "listing"})
	for _, l := range skippingListings {
		c.WithLabelValues(l[0], l[1])
	}
	if reg != nil {
		if err := reg.Register(c); err != nil {
			return nil, fmt.Errorf("registering the host listing metrics: %w", err)
		}
	}
	return &listingSkips{log: log, skipped: c}, nil
}

// reporter is the Skipped of group's host operations.
func (s *listingSkips) reporter(group string) func(listing string, err error) {
	return func(listing string, err error) {
		s.skipped.WithLabelValues(group, listing).Inc()
		s.log.Error(err, "left an entry out of a host listing: the host's answer for it cannot be read; the other entries were listed",
			"group", group, "listing", listing)
	}
}
