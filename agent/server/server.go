package server

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"time"

	"github.com/go-logr/logr"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
)

// DefaultShutdownTimeout bounds how long shutdown waits for in-flight calls.
const DefaultShutdownTimeout = 30 * time.Second

// Listener opens the listener of an API group version; Listen is the real
// one.
type Listener func(ctx context.Context, o ListenOptions, group, version string) (net.Listener, error)

// Options configures a Server.
type Options struct {
	// Log is the base logger; requests get one with group, version and method.
	Log logr.Logger
	// Listen says where the endpoints listen.
	Listen ListenOptions
	// Listener opens listeners; nil means Listen.
	Listener Listener
	// Endpoints are the API group versions to serve.
	Endpoints []Endpoint
	// Metrics, when set, measures every request.
	Metrics *Metrics
	// UnaryInterceptors and StreamInterceptors run, in order, after metrics
	// and before the handler, on every endpoint: the place for gating,
	// caller identity and audit.
	UnaryInterceptors  []grpc.UnaryServerInterceptor
	StreamInterceptors []grpc.StreamServerInterceptor
	// ShutdownTimeout bounds graceful shutdown; 0 means DefaultShutdownTimeout.
	ShutdownTimeout time.Duration
	// Credentials, when set, run on every accepted connection; caller
	// identity (package identity) plugs in here.
	Credentials credentials.TransportCredentials
	// HandshakeTimeout bounds a connection's handshake (Credentials
	// included) and its HTTP/2 preface; 0 means HandshakeTimeout. Give
	// credentials that take time (a lookup of the caller) their time on
	// top of it.
	HandshakeTimeout time.Duration
}

// Server serves the endpoints.
type Server struct {
	opts    Options
	log     logr.Logger
	metrics *Metrics
	served  []served
}

type served struct {
	ep      Endpoint
	address string
	lis     net.Listener
	grpc    *grpc.Server
}

// New checks the options and returns a Server; nothing listens yet.
func New(o Options) (*Server, error) {
	if len(o.Endpoints) == 0 {
		return nil, errors.New("no endpoints to serve")
	}
	seen := map[string]bool{}
	for _, ep := range o.Endpoints {
		name := BaseName(ep.Group, ep.Version)
		if seen[name] {
			return nil, fmt.Errorf("endpoint %s listed twice", name)
		}
		seen[name] = true
		if ep.Register == nil {
			return nil, fmt.Errorf("endpoint %s has no service", name)
		}
	}
	if o.Listener == nil {
		o.Listener = Listen
	}
	if o.ShutdownTimeout <= 0 {
		o.ShutdownTimeout = DefaultShutdownTimeout
	}
	if o.HandshakeTimeout <= 0 {
		o.HandshakeTimeout = HandshakeTimeout
	}
	return &Server{opts: o, log: o.Log, metrics: o.Metrics}, nil
}

// Listen opens every listener and registers every service. If one listener
// fails, those already opened are closed.
func (s *Server) Listen(ctx context.Context) error {
	if s.served != nil {
		return errors.New("server is already listening")
	}
	for _, ep := range s.opts.Endpoints {
		lis, err := s.opts.Listener(ctx, s.opts.Listen, ep.Group, ep.Version)
		if err != nil {
			s.closeListeners()
			return fmt.Errorf("%s %s: %w", ep.Group, ep.Version, err)
		}
		address := s.opts.Listen.Address(ep.Group, ep.Version)
		lis = newPlacedListener(lis, MaxConnectionsPerEndpoint)
		unary, stream := s.chain(ep, address)
		opts := append(grpcBounds(s.opts.HandshakeTimeout), grpc.ChainUnaryInterceptor(unary...), grpc.ChainStreamInterceptor(stream...))
		if s.opts.Credentials != nil {
			var refused func()
			if s.metrics != nil {
				refused = s.metrics.connectionRefused(ep.Group, ep.Version)
			}
			opts = append(opts, grpc.Creds(newCallerPlaces(s.opts.Credentials, MaxConnectionsPerCaller, s.log, address, refused)))
		}
		g := grpc.NewServer(opts...)
		ep.Register(g)
		s.served = append(s.served, served{ep: ep, address: address, lis: lis, grpc: g})
	}
	return nil
}

func (s *Server) closeListeners() {
	for _, sv := range s.served {
		_ = sv.lis.Close()
	}
	s.served = nil
}

// Addresses returns the pipes or sockets listened on, after Listen.
func (s *Server) Addresses() []string {
	out := make([]string, 0, len(s.served))
	for _, sv := range s.served {
		out = append(out, sv.address)
	}
	return out
}

// Serve serves until ctx is done, then shuts down gracefully: listeners
// close, in-flight calls finish (up to the shutdown timeout), then it
// returns. It returns early with an error if an endpoint stops serving.
func (s *Server) Serve(ctx context.Context) error {
	if s.served == nil {
		return errors.New("Serve called before Listen")
	}
	errs := make(chan error, len(s.served))
	var wg sync.WaitGroup
	for _, sv := range s.served {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s.log.V(1).Info("serving", keyGroup, sv.ep.Group, keyVersion, sv.ep.Version, keyAddress, sv.address)
			if err := sv.grpc.Serve(sv.lis); err != nil {
				errs <- fmt.Errorf("serving %s: %w", sv.address, err)
			}
		}()
	}
	s.log.Info("serving CSI Proxy API endpoints", "count", len(s.served))

	var serveErr error
	select {
	case <-ctx.Done():
	case serveErr = <-errs:
	}
	s.shutdown()
	wg.Wait()
	return serveErr
}

// shutdown stops every gRPC server gracefully, and forcibly once the
// shutdown timeout has passed.
func (s *Server) shutdown() {
	s.log.Info("shutting down: waiting for in-flight calls", "timeout", s.opts.ShutdownTimeout.String())
	done := make(chan struct{})
	go func() {
		var wg sync.WaitGroup
		for _, sv := range s.served {
			wg.Go(sv.grpc.GracefulStop)
		}
		wg.Wait()
		close(done)
	}()
	timer := time.NewTimer(s.opts.ShutdownTimeout)
	defer timer.Stop()
	select {
	case <-done:
		s.log.Info("shut down cleanly")
	case <-timer.C:
		s.log.Info("shutdown timeout passed: cutting remaining calls")
		for _, sv := range s.served {
			sv.grpc.Stop()
		}
		<-done
	}
}
