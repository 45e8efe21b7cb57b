package server

import (
	"context"
	"path"
	"runtime"

	"github.com/go-logr/logr"
	"google.golang.org/grpc"

	"github.com/pipeguard/pipeguard/agent/apierr"
)

// Log keys.
const (
	keyGroup   = "group"
	keyVersion = "version"
	keyMethod  = "method"
	keyAddress = "address"
)

// chain returns the unary and stream interceptors of one endpoint, in order.
func (s *Server) chain(ep Endpoint, address string) ([]grpc.UnaryServerInterceptor, []grpc.StreamServerInterceptor) {
	info := EndpointInfo{Group: ep.Group, Version: ep.Version, Address: address}
	log := s.log.WithValues(keyGroup, ep.Group, keyVersion, ep.Version)

	unary := []grpc.UnaryServerInterceptor{contextUnary(info, log)}
	stream := []grpc.StreamServerInterceptor{contextStream(info, log)}
	if s.metrics != nil {
		unary = append(unary, s.metrics.Unary(ep.Group, ep.Version))
		stream = append(stream, s.metrics.Stream(ep.Group, ep.Version))
	}
	unary = append(unary, s.opts.UnaryInterceptors...)
	stream = append(stream, s.opts.StreamInterceptors...)
	if ep.NeedsWindows {
		unary = append(unary, needsWindowsUnary(ep))
		stream = append(stream, needsWindowsStream(ep))
	}
	unary = append(unary, errorShapeUnary)
	stream = append(stream, errorShapeStream)
	return unary, stream
}

func contextUnary(info EndpointInfo, log logr.Logger) grpc.UnaryServerInterceptor {
	return func(ctx context.Context, req any, gi *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
		ctx = NewEndpointContext(ctx, info)
		ctx = logr.NewContext(ctx, log.WithValues(keyMethod, path.Base(gi.FullMethod)))
		return handler(ctx, req)
	}
}

func contextStream(info EndpointInfo, log logr.Logger) grpc.StreamServerInterceptor {
	return func(srv any, ss grpc.ServerStream, gi *grpc.StreamServerInfo, handler grpc.StreamHandler) error {
		ctx := NewEndpointContext(ss.Context(), info)
		ctx = logr.NewContext(ctx, log.WithValues(keyMethod, path.Base(gi.FullMethod)))
		return handler(srv, &contextStreamWrapper{ServerStream: ss, ctx: ctx})
	}
}

type contextStreamWrapper struct {
	grpc.ServerStream
	ctx context.Context
}

func (w *contextStreamWrapper) Context() context.Context { return w.ctx }

// needsWindowsUnary answers every call of a Windows-only group on another OS,
// before any validation, so callers get one clear answer.
func needsWindowsUnary(ep Endpoint) grpc.UnaryServerInterceptor {
	return func(_ context.Context, _ any, gi *grpc.UnaryServerInfo, _ grpc.UnaryHandler) (any, error) {
		return nil, apierr.NeedsWindows(ep.Group, ep.Version, path.Base(gi.FullMethod), runtime.GOOS)
	}
}

func needsWindowsStream(ep Endpoint) grpc.StreamServerInterceptor {
	return func(_ any, _ grpc.ServerStream, gi *grpc.StreamServerInfo, _ grpc.StreamHandler) error {
		return apierr.NeedsWindows(ep.Group, ep.Version, path.Base(gi.FullMethod), runtime.GOOS)
	}
}

// errorShapeUnary gives handler errors their gRPC codes (package apierr) and
// logs failures with the request's logger.
func errorShapeUnary(ctx context.Context, req any, _ *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
	resp, err := handler(ctx, req)
	if err != nil {
		err = apierr.Status(err)
		logr.FromContextOrDiscard(ctx).V(1).Info("request failed", "error", err.Error())
		return nil, err
	}
	return resp, nil
}

func errorShapeStream(srv any, ss grpc.ServerStream, _ *grpc.StreamServerInfo, handler grpc.StreamHandler) error {
	return apierr.Status(handler(srv, ss))
}
