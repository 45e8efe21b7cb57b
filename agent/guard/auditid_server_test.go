package guard

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"testing"

	"github.com/go-logr/logr"
	fsv1 "github.com/kubernetes-csi/csi-proxy/client/api/filesystem/v1"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/grpc/test/bufconn"

	"github.com/pipeguard/pipeguard/agent/apierr"
	"github.com/pipeguard/pipeguard/agent/identity"
	"github.com/pipeguard/pipeguard/agent/server"
)

// fsServer answers the filesystem calls the audit ID tests make: PathExists
// succeeds and notes the request metadata keys it got, Mkdir is refused by
// its handler, Rmdir fails on the host.
type fsServer struct {
	fsv1.UnimplementedFilesystemServer
	mu   sync.Mutex
	keys []string // request metadata keys of the last PathExists
}

func (s *fsServer) PathExists(ctx context.Context, _ *fsv1.PathExistsRequest) (*fsv1.PathExistsResponse, error) {
	md, _ := metadata.FromIncomingContext(ctx)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.keys = s.keys[:0]
	for k := range md {
		s.keys = append(s.keys, k)
	}
	return &fsv1.PathExistsResponse{Exists: true}, nil
}

func (s *fsServer) Mkdir(context.Context, *fsv1.MkdirRequest) (*fsv1.MkdirResponse, error) {
	return nil, fmt.Errorf("mkdir: %w", &apierr.Denied{Rule: "allowed-services", Msg: "service x is not allowed"})
}

func (s *fsServer) Rmdir(context.Context, *fsv1.RmdirRequest) (*fsv1.RmdirResponse, error) {
	return nil, status.Error(codes.Unknown, "rmdir failed: directory not empty")
}

// sawKey reports whether the last PathExists got metadata key k, spelled
// exactly so.
func (s *fsServer) sawKey(k string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, got := range s.keys {
		if got == k {
			return true
		}
	}
	return false
}

// watchService is a server-streaming method, so that the streaming
// interceptor runs under a real server: the request's path says whether
// the handler answers ("ok"), refuses ("refuse") or fails ("fail").
var watchService = grpc.ServiceDesc{
	ServiceName: "v1.Watcher",
	HandlerType: (*any)(nil),
	Streams: []grpc.StreamDesc{{StreamName: "Watch", ServerStreams: true, Handler: func(_ any, ss grpc.ServerStream) error {
		var req fsv1.PathExistsRequest
		if err := ss.RecvMsg(&req); err != nil {
			return err
		}
		switch req.Path {
		case "refuse":
			return fmt.Errorf("watch: %w", &apierr.Denied{Rule: "allowed-services", Msg: "service x is not allowed"})
		case "fail":
			return status.Error(codes.Unknown, "watch failed: the host went away")
		}
		return ss.SendMsg(&fsv1.PathExistsResponse{Exists: true})
	}}},
}

// serveGuarded serves the filesystem v1 API and watchService through a
// real gRPC server whose every call passes g, in the agent's order
// (endpoint, guard, error shape), on an in-memory connection whose peer is
// always one caller. It returns a client connection and the filesystem
// server.
func serveGuarded(t *testing.T, g *Guard) (*grpc.ClientConn, *fsServer) {
	t.Helper()
	caller := &identity.Caller{Source: identity.SourcePeer, PID: 4242, UID: 1000, GID: 2000}
	ep := server.EndpointInfo{Group: "filesystem", Version: "v1"}
	srv := grpc.NewServer(
		grpc.Creds(identity.NewCredentials(logr.Discard(), func(net.Conn) (*identity.Caller, func(), error) { return caller, nil, nil })),
		grpc.ChainUnaryInterceptor(func(ctx context.Context, req any, _ *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
			return h(server.NewEndpointContext(ctx, ep), req)
		}, g.Unary, func(ctx context.Context, req any, _ *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
			resp, err := h(ctx, req)
			if err != nil {
				return nil, apierr.Status(err)
			}
			return resp, nil
		}),
		grpc.ChainStreamInterceptor(func(srv any, ss grpc.ServerStream, _ *grpc.StreamServerInfo, h grpc.StreamHandler) error {
			return h(srv, fakeStream{ServerStream: ss, ctx: server.NewEndpointContext(ss.Context(), ep)})
		}, g.Stream, func(srv any, ss grpc.ServerStream, _ *grpc.StreamServerInfo, h grpc.StreamHandler) error {
			return apierr.Status(h(srv, ss))
		}),
	)
	fs := &fsServer{}
	fsv1.RegisterFilesystemServer(srv, fs)
	srv.RegisterService(&watchService, struct{}{})
	lis := bufconn.Listen(1 << 20)
	go func() { _ = srv.Serve(lis) }()
	t.Cleanup(srv.Stop)
	conn, err := grpc.NewClient("passthrough:///guarded",
		grpc.WithContextDialer(func(ctx context.Context, _ string) (net.Conn, error) { return lis.DialContext(ctx) }),
		grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	return conn, fs
}

// watch makes one Watch call and reads it to its end. The grpc.Header and
// grpc.Trailer options among opts get the call's header and trailers.
func watch(ctx context.Context, conn *grpc.ClientConn, path string, opts ...grpc.CallOption) error {
	st, err := conn.NewStream(ctx, &grpc.StreamDesc{ServerStreams: true}, "/v1.Watcher/Watch", opts...)
	if err != nil {
		return err
	}
	if err := st.SendMsg(&fsv1.PathExistsRequest{Path: path}); err != nil && !errors.Is(err, io.EOF) {
		return err
	}
	_ = st.CloseSend()
	var resp fsv1.PathExistsResponse
	for err == nil {
		err = st.RecvMsg(&resp)
	}
	if errors.Is(err, io.EOF) {
		return nil
	}
	return err
}

// guardedCall is one call of the audit ID tests, made with ctx and opts.
type guardedCall struct {
	name   string
	verb   string // the records' verb
	code   codes.Code
	msg    string
	stages int // records the call leaves
	call   func(ctx context.Context, conn *grpc.ClientConn, opts ...grpc.CallOption) error
}

// guardedCalls are an allowed read, a guard denial before the handler, a
// handler refusal, a host failure, and their streaming counterparts.
var guardedCalls = []guardedCall{
	{"allowed read", "PathExists", codes.OK, "", 1, func(ctx context.Context, conn *grpc.ClientConn, o ...grpc.CallOption) error {
		_, err := fsv1.NewFilesystemClient(conn).PathExists(ctx, &fsv1.PathExistsRequest{Path: "/var/lib/kubelet/pods"}, o...)
		return err
	}},
	{"guard denial", "PathExists", codes.PermissionDenied, `path: path "/etc/shadow" is outside the allowed roots [/var/lib/kubelet]: it must be a root or lie below one after a separator (the kubelet path and the working dirs) (confinement rule outside-roots)`, 1,
		func(ctx context.Context, conn *grpc.ClientConn, o ...grpc.CallOption) error {
			_, err := fsv1.NewFilesystemClient(conn).PathExists(ctx, &fsv1.PathExistsRequest{Path: "/etc/shadow"}, o...)
			return err
		}},
	{"handler refusal", "Mkdir", codes.PermissionDenied, "mkdir: service x is not allowed (rule allowed-services)", 2,
		func(ctx context.Context, conn *grpc.ClientConn, o ...grpc.CallOption) error {
			_, err := fsv1.NewFilesystemClient(conn).Mkdir(ctx, &fsv1.MkdirRequest{Path: "/var/lib/kubelet/pods/x"}, o...)
			return err
		}},
	{"host failure", "Rmdir", codes.Unknown, "rmdir failed: directory not empty", 2,
		func(ctx context.Context, conn *grpc.ClientConn, o ...grpc.CallOption) error {
			_, err := fsv1.NewFilesystemClient(conn).Rmdir(ctx, &fsv1.RmdirRequest{Path: "/var/lib/kubelet/pods/x"}, o...)
			return err
		}},
	{"stream", "Watch", codes.OK, "", 2, streamCall("ok")},
	{"stream refusal", "Watch", codes.PermissionDenied, "watch: service x is not allowed (rule allowed-services)", 2, streamCall("refuse")},
	{"stream failure", "Watch", codes.Unknown, "watch failed: the host went away", 2, streamCall("fail")},
}

// streamCall makes a Watch call with path.
func streamCall(path string) func(context.Context, *grpc.ClientConn, ...grpc.CallOption) error {
	return func(ctx context.Context, conn *grpc.ClientConn, opts ...grpc.CallOption) error {
		return watch(ctx, conn, path, opts...)
	}
}
