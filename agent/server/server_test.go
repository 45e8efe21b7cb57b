package server

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/go-logr/logr"
	fsv1 "github.com/kubernetes-csi/csi-proxy/client/api/filesystem/v1"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"

	"github.com/pipeguard/pipeguard/agent/confine"
)

// stub answers PathExists with a confinement refusal, as a handler would.
type stub struct {
	fsv1.UnimplementedFilesystemServer
}

func (stub) PathExists(context.Context, *fsv1.PathExistsRequest) (*fsv1.PathExistsResponse, error) {
	return nil, &confine.Refusal{Rule: confine.RuleOutsideRoots, Field: "path", Path: "/etc", Reason: "is outside"}
}

func fsEndpoint(needsWindows bool) Endpoint {
	return Endpoint{Group: "filesystem", Version: "v1", NeedsWindows: needsWindows,
		Register: func(g *grpc.Server) { fsv1.RegisterFilesystemServer(g, &stub{}) }}
}

func serve(t *testing.T, o Options) (fsv1.FilesystemClient, func()) {
	t.Helper()
	skipInProcessPipes(t)
	conn, err := grpc.NewClient(dialTarget(listenAndServe(t, o)[0]), append(dialOptions(), grpc.WithTransportCredentials(insecure.NewCredentials()))...)
	if err != nil {
		t.Fatal(err)
	}
	return fsv1.NewFilesystemClient(conn), func() { conn.Close() }
}

// listenAndServe starts a Server with o, its log discarded and its sockets
// in a temporary directory, serves it until the test ends, and returns its
// addresses.
func listenAndServe(t *testing.T, o Options) []string {
	t.Helper()
	o.Log = logr.Discard()
	o.Listen = ListenOptions{SocketDir: filepath.Join(t.TempDir(), "s")}
	s, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	if err := s.Listen(ctx); err != nil {
		cancel()
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- s.Serve(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
	})
	return s.Addresses()
}

// TestInterceptorChain checks the one place where gate, identity and audit
// will plug in: the interceptors run in order, see which endpoint was called,
// get a request logger, and see the handler's error already shaped.
func TestInterceptorChain(t *testing.T) {
	var mu sync.Mutex
	var seen []string
	record := func(name string) grpc.UnaryServerInterceptor {
		return func(ctx context.Context, req any, info *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
			ep, ok := EndpointFromContext(ctx)
			_, logErr := logr.FromContext(ctx)
			hasLog := logErr == nil
			resp, err := h(ctx, req)
			mu.Lock()
			seen = append(seen, strings.Join([]string{name, ep.Group, ep.Version, filepath.Base(ep.Address), info.FullMethod,
				status.Code(err).String()}, " "))
			if !ok || !hasLog {
				seen = append(seen, name+" missing endpoint info or logger")
			}
			mu.Unlock()
			return resp, err
		}
	}
	c, stop := serve(t, Options{
		Endpoints:         []Endpoint{fsEndpoint(false)},
		UnaryInterceptors: []grpc.UnaryServerInterceptor{record("outer"), record("inner")},
	})
	defer stop()
	_, err := c.PathExists(context.Background(), &fsv1.PathExistsRequest{})
	if status.Code(err) != codes.PermissionDenied {
		t.Fatalf("code %v, want PermissionDenied", status.Code(err))
	}
	want := []string{
		"inner filesystem v1 " + fsv1Address + " /v1.Filesystem/PathExists PermissionDenied",
		"outer filesystem v1 " + fsv1Address + " /v1.Filesystem/PathExists PermissionDenied",
	}
	if strings.Join(seen, "\n") != strings.Join(want, "\n") {
		t.Fatalf("interceptors saw\n%s\nwant\n%s", strings.Join(seen, "\n"), strings.Join(want, "\n"))
	}
}

func TestNeedsWindowsStopsBeforeHandler(t *testing.T) {
	var reached bool
	c, stop := serve(t, Options{
		Endpoints: []Endpoint{fsEndpoint(true)},
		UnaryInterceptors: []grpc.UnaryServerInterceptor{func(ctx context.Context, req any, _ *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
			reached = true // the gate still sees the call
			return h(ctx, req)
		}},
	})
	defer stop()
	_, err := c.PathExists(context.Background(), &fsv1.PathExistsRequest{})
	s := status.Convert(err)
	if s.Code() != codes.Unimplemented || !strings.HasPrefix(s.Message(), "filesystem v1 PathExists needs Windows") || !reached {
		t.Fatalf("got %v %q, reached=%v", s.Code(), s.Message(), reached)
	}
}

func TestNewRejects(t *testing.T) {
	cases := map[string]struct {
		eps  []Endpoint
		want string
	}{
		"nothing":     {nil, "no endpoints to serve"},
		"duplicate":   {[]Endpoint{fsEndpoint(false), fsEndpoint(false)}, "endpoint csi-proxy-filesystem-v1 listed twice"},
		"no register": {[]Endpoint{{Group: "disk", Version: "v1"}}, "endpoint csi-proxy-disk-v1 has no service"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			_, err := New(Options{Endpoints: tc.eps})
			if err == nil || err.Error() != tc.want {
				t.Fatalf("err = %v, want %q", err, tc.want)
			}
		})
	}
}

func TestListenFailureClosesOpenedListeners(t *testing.T) {
	opened := 0
	closed := 0
	s, err := New(Options{
		Log:       logr.Discard(),
		Endpoints: []Endpoint{fsEndpoint(false), {Group: "disk", Version: "v1", Register: func(*grpc.Server) {}}},
		Listener: func(ctx context.Context, o ListenOptions, group, version string) (netListener, error) {
			if group == "disk" {
				return nil, errors.New("pipe busy")
			}
			opened++
			return &countingListener{closed: &closed}, nil
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	err = s.Listen(context.Background())
	if err == nil || err.Error() != "disk v1: pipe busy" || opened != 1 || closed != 1 {
		t.Fatalf("err=%v opened=%d closed=%d", err, opened, closed)
	}
}
