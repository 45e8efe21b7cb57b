package app

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log"
	"net"
	"net/http"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/go-logr/logr"
	"golang.org/x/net/netutil"
	"sigs.k8s.io/controller-runtime/pkg/certwatcher"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	ctrlwebhook "sigs.k8s.io/controller-runtime/pkg/webhook"

	"github.com/pipeguard/pipeguard/webhook"
)

// ServerOptions configure the webhook's TLS server. Zero values take the
// bounds of package webhook (limits.go).
type ServerOptions struct {
	Host string
	Port int
	// CertDir holds CertName and KeyName; they are reloaded when they
	// change.
	CertDir, CertName, KeyName string
	// ClientCAFile, when set, is a PEM bundle of the CAs that sign the
	// API server's webhook client certificate: every connection must
	// present a certificate they verify, or it gets no answer at all. It
	// is read again when it changes.
	ClientCAFile string

	ReadHeaderTimeout, ReadTimeout, WriteTimeout, IdleTimeout time.Duration
	// MaxConnections bounds the connections open at once.
	MaxConnections int
	// Logger receives the server's own errors (TLS handshakes that fail)
	// at V(1).
	Logger logr.Logger
}

func (o *ServerOptions) setDefaults() {
	set := func(d *time.Duration, v time.Duration) {
		if *d == 0 {
			*d = v
		}
	}
	set(&o.ReadHeaderTimeout, webhook.ReadHeaderTimeout)
	set(&o.ReadTimeout, webhook.ReadTimeout)
	set(&o.WriteTimeout, webhook.WriteTimeout)
	set(&o.IdleTimeout, webhook.IdleTimeout)
	if o.MaxConnections <= 0 {
		o.MaxConnections = webhook.DefaultMaxConnections
	}
	if o.CertName == "" {
		o.CertName = "tls.crt"
	}
	if o.KeyName == "" {
		o.KeyName = "tls.key"
	}
}

// server is the webhook server: controller-runtime's webhook.Server
// cannot bound reading a request or the connections open, so this one
// does, and it can verify the API server's client certificate from a file
// it reloads. It serves HTTP/1.1 only, where each bound applies to one
// review at a time.
type server struct {
	opts ServerOptions
	mux  *http.ServeMux
	// clientCAs is nil without ClientCAFile.
	clientCAs *caBundle

	mu      sync.Mutex
	started bool
}

var _ ctrlwebhook.Server = (*server)(nil)

// NewServer returns the webhook server pipeguard-webhook serves with; a
// ClientCAFile that cannot be read or holds no certificate is an error
// now, not at the first handshake.
func NewServer(opts ServerOptions) (ctrlwebhook.Server, error) {
	return newServer(opts)
}

func newServer(opts ServerOptions) (*server, error) {
	opts.setDefaults()
	s := &server{opts: opts, mux: http.NewServeMux()}
	if opts.ClientCAFile != "" {
		b, err := loadCABundle(opts.ClientCAFile, opts.Logger)
		if err != nil {
			return nil, err
		}
		s.clientCAs = b
	}
	return s, nil
}

// NeedLeaderElection implements manager.LeaderElectionRunnable: every
// replica serves.
func (*server) NeedLeaderElection() bool { return false }

// Register serves hook at path.
func (s *server) Register(path string, hook http.Handler) { s.mux.Handle(path, hook) }

// WebhookMux returns the server's mux.
func (s *server) WebhookMux() *http.ServeMux { return s.mux }

// StartedChecker fails until the server listens.
func (s *server) StartedChecker() healthz.Checker {
	return func(*http.Request) error {
		s.mu.Lock()
		defer s.mu.Unlock()
		if !s.started {
			return errors.New("webhook server has not been started yet")
		}
		return nil
	}
}

// tlsConfig is the server's TLS configuration, with the certificate of
// getCert.
func (s *server) tlsConfig(getCert func(*tls.ClientHelloInfo) (*tls.Certificate, error)) *tls.Config {
	cfg := &tls.Config{
		MinVersion:     tls.VersionTLS12,
		NextProtos:     []string{"http/1.1"},
		GetCertificate: getCert,
	}
	if s.clientCAs == nil {
		return cfg
	}
	// The bundle is looked up on each handshake, so a renewed CA takes
	// effect without a restart.
	cfg.GetConfigForClient = func(*tls.ClientHelloInfo) (*tls.Config, error) {
		c := cfg.Clone()
		c.GetConfigForClient = nil
		c.ClientAuth = tls.RequireAndVerifyClientCert
		c.ClientCAs = s.clientCAs.pool()
		return c, nil
	}
	return cfg
}

// Start serves until ctx ends, then shuts down gracefully.
func (s *server) Start(ctx context.Context) error {
	certs, err := certwatcher.New(filepath.Join(s.opts.CertDir, s.opts.CertName), filepath.Join(s.opts.CertDir, s.opts.KeyName))
	if err != nil {
		return fmt.Errorf("the webhook server's certificate: %w", err)
	}
	go func() {
		if err := certs.Start(ctx); err != nil {
			s.opts.Logger.Error(err, "watching the webhook server's certificate")
		}
	}()
	addr := net.JoinHostPort(s.opts.Host, strconv.Itoa(s.opts.Port))
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("the webhook server cannot listen on %s: %w", addr, err)
	}
	// The cap counts connections still in their TLS handshake too.
	l = tls.NewListener(netutil.LimitListener(l, s.opts.MaxConnections), s.tlsConfig(certs.GetCertificate))
	srv := &http.Server{
		Handler:           s.mux,
		BaseContext:       func(net.Listener) context.Context { return ctx },
		ReadHeaderTimeout: s.opts.ReadHeaderTimeout,
		ReadTimeout:       s.opts.ReadTimeout,
		WriteTimeout:      s.opts.WriteTimeout,
		IdleTimeout:       s.opts.IdleTimeout,
		MaxHeaderBytes:    webhook.MaxHeaderBytes,
		// Failed handshakes are the callers' doing; at V(1) they cannot
		// flood the log.
		ErrorLog: log.New(logWriter{s.opts.Logger.V(1)}, "", 0),
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		<-ctx.Done()
		shutdown, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if err := srv.Shutdown(shutdown); err != nil {
			s.opts.Logger.Error(err, "shutting down the webhook server")
		}
	}()
	s.mu.Lock()
	s.started = true
	s.mu.Unlock()
	s.opts.Logger.Info("serving webhook server", "address", addr, "clientCAFile", s.opts.ClientCAFile)
	if err := srv.Serve(l); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	<-done
	return nil
}

// logWriter writes the lines of a log.Logger to a logr.Logger.
type logWriter struct{ log logr.Logger }

func (w logWriter) Write(p []byte) (int, error) {
	w.log.Info(strings.TrimSuffix(string(p), "\n"))
	return len(p), nil
}
