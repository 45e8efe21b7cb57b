package server

import (
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/keepalive"
)

// Bounds of what one caller can make an endpoint hold. Each is documented
// in docs/agent.md ("Bounds"), which a test checks against these values.
const (
	// MaxHeaderListBytes bounds the request headers of one call (HTTP/2
	// SETTINGS_MAX_HEADER_LIST_SIZE): user agent and bearer token
	// included. A ServiceAccount token is about 1 KiB; grpc-go's user agent
	// a few dozen bytes. A client that sends more has its call refused by
	// the transport (grpc-go clients refuse to send it at all).
	MaxHeaderListBytes = 16 << 10
	// MaxRequestBytes bounds one request message. The largest CSI Proxy
	// request (SMB mapping: a remote path, a local path, a user name and a
	// password) is a few KiB; paths are bounded further by the confinement
	// (MaxPathWindows, MaxPathLinux). Larger messages are refused with
	// ResourceExhausted before they are decoded.
	MaxRequestBytes = 128 << 10
	// MaxStreamsPerConnection bounds the calls in flight on one
	// connection; a client with more waits for a free stream.
	MaxStreamsPerConnection = 32
	// MaxConnectionsPerEndpoint bounds the open connections of one pipe or
	// socket. Past it the endpoint accepts no more: new connections wait
	// (in the kernel's backlog, or as a busy pipe) until one closes.
	MaxConnectionsPerEndpoint = 128
	// MaxConnectionsPerCaller bounds the open connections of one caller on
	// one pipe or socket (see CallerKeyer for who a caller is). A caller
	// past it has the new connection closed at once, so that one caller
	// cannot take an endpoint's every place.
	MaxConnectionsPerCaller = 16
	// HandshakeTimeout bounds the time from accepting a connection to its
	// HTTP/2 preface: a connection that sends nothing is closed. The
	// caller's identification runs in it too, and takes its own time on
	// top (Options.HandshakeTimeout).
	HandshakeTimeout = 5 * time.Second
	// IdleConnectionTimeout closes a connection with no call in flight for
	// this long. gRPC clients reconnect on their next call.
	IdleConnectionTimeout = 2 * time.Minute
)

// grpcBounds are the server options that apply the bounds above, with
// handshake as the handshake's bound.
func grpcBounds(handshake time.Duration) []grpc.ServerOption {
	return []grpc.ServerOption{
		grpc.MaxHeaderListSize(MaxHeaderListBytes),
		grpc.MaxRecvMsgSize(MaxRequestBytes),
		grpc.MaxConcurrentStreams(MaxStreamsPerConnection),
		grpc.ConnectionTimeout(handshake),
		grpc.KeepaliveParams(keepalive.ServerParameters{MaxConnectionIdle: IdleConnectionTimeout}),
	}
}
