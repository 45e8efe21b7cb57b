package server

import (
	"context"

	"google.golang.org/grpc"
)

// Endpoint is one CSI Proxy API group version, served on its own pipe.
type Endpoint struct {
	// Group is the API group, e.g. "filesystem".
	Group string
	// Version is the API version, e.g. "v1".
	Version string
	// Register registers the version's gRPC service on s.
	Register func(s *grpc.Server)
	// NeedsWindows is set when the group's host operations exist only on
	// Windows and this agent runs elsewhere: every call then answers
	// Unimplemented.
	NeedsWindows bool
}

// EndpointInfo identifies the endpoint a request arrived on.
type EndpointInfo struct {
	Group   string
	Version string
	// Address is the pipe or socket path.
	Address string
}

type infoKey struct{}

// NewEndpointContext returns ctx carrying info.
func NewEndpointContext(ctx context.Context, info EndpointInfo) context.Context {
	return context.WithValue(ctx, infoKey{}, info)
}

// EndpointFromContext returns the endpoint a request arrived on, as set by the
// server before any interceptor runs.
func EndpointFromContext(ctx context.Context) (EndpointInfo, bool) {
	info, ok := ctx.Value(infoKey{}).(EndpointInfo)
	return info, ok
}
