package guard

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/go-logr/logr"
	fsv1 "github.com/kubernetes-csi/csi-proxy/client/api/filesystem/v1"
	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/peer"

	"github.com/pipeguard/pipeguard/agent/audit"
	"github.com/pipeguard/pipeguard/agent/confine"
	"github.com/pipeguard/pipeguard/agent/gate"
	"github.com/pipeguard/pipeguard/agent/identity"
	"github.com/pipeguard/pipeguard/agent/server"
)

// newTestGuard returns a guard with the shipped rules and an audit log in a
// temp dir.
func newTestGuard(tb testing.TB) (*Guard, string) {
	tb.Helper()
	dir := tb.TempDir()
	engine, err := gate.New(context.Background(), gate.Options{Log: logr.Discard()})
	if err != nil {
		tb.Fatal(err)
	}
	path := filepath.Join(dir, "audit.log")
	log, err := audit.Open(audit.Options{Path: path, Log: logr.Discard()})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = log.Close() })
	conf, err := confine.New(confine.Options{Flavour: confine.Linux, Roots: []string{"/var/lib/kubelet"}})
	if err != nil {
		tb.Fatal(err)
	}
	g, err := New(Options{Confiner: conf, Gate: engine, Audit: log})
	if err != nil {
		tb.Fatal(err)
	}
	return g, path
}

// callContext is the context of a request on a connection from caller.
func callContext(caller *identity.Caller, md metadata.MD) context.Context {
	ctx := peer.NewContext(context.Background(), &peer.Peer{AuthInfo: identity.AuthInfo{Caller: caller}})
	ctx = server.NewEndpointContext(ctx, server.EndpointInfo{Group: "filesystem", Version: "v1"})
	ctx = metadata.NewIncomingContext(ctx, md)
	return grpc.NewContextWithServerTransportStream(ctx, &headerStream{})
}

// headerStream takes the response headers the guard sets.
type headerStream struct{ header metadata.MD }

func (s *headerStream) Method() string { return "" }
func (s *headerStream) SetHeader(md metadata.MD) error {
	s.header = metadata.Join(s.header, md)
	return nil
}
func (s *headerStream) SendHeader(md metadata.MD) error { return s.SetHeader(md) }
func (s *headerStream) SetTrailer(metadata.MD) error    { return nil }

// BenchmarkUnary measures the guard alone (identity, confinement, gate,
// audit record) around a handler that does nothing, for a read and for a
// mutating call (whose write-ahead record is fsynced), from a client that
// does not ask for its audit ID, as csi-proxy clients do not, and for a
// read from one that does.
func BenchmarkUnary(b *testing.B) {
	caller := &identity.Caller{Source: identity.SourcePeer, PID: 4242, UID: 0, GID: 0, ProcessStart: "2025-03-01T08:00:00.00Z", PodMapped: true}
	ok := func(context.Context, any) (any, error) { return &fsv1.PathExistsResponse{Exists: true}, nil }
	for _, tc := range []struct {
		name, method string
		req          any
		md           []string
	}{
		{"PathExists", "PathExists", &fsv1.PathExistsRequest{Path: "/var/lib/kubelet/pods"}, nil},
		{"Mkdir", "Mkdir", &fsv1.MkdirRequest{Path: "/var/lib/kubelet/pods/x"}, nil},
		{"PathExistsAskingAuditID", "PathExists", &fsv1.PathExistsRequest{Path: "/var/lib/kubelet/pods"}, []string{AuditIDRequestHeader, "1"}},
	} {
		b.Run(tc.name, func(b *testing.B) {
			g, _ := newTestGuard(b)
			info := &grpc.UnaryServerInfo{FullMethod: "/v1.Filesystem/" + tc.method}
			kv := append([]string{"user-agent", "grpc-go/1.85.0"}, tc.md...)
			b.ReportAllocs()
			for b.Loop() {
				ctx := callContext(caller, metadata.Pairs(kv...))
				if _, err := g.Unary(ctx, tc.req, info, ok); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
