package app

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/go-logr/logr"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"

	"github.com/pipeguard/pipeguard/agent/server"
)

// running is an agent serving on unix sockets in a temp dir.
type running struct {
	agent     *Agent
	socketDir string
	kubelet   string
	cancel    context.CancelFunc
	done      chan error
}

// start assembles an agent from o, filling in a temp socket dir and, when
// o.KubeletPath is empty, a temp kubelet dir, and serves it until the test
// ends.
func start(t testing.TB, o Options) *running {
	t.Helper()
	base := t.TempDir()
	if o.SocketDir == "" {
		o.SocketDir = filepath.Join(base, "sockets")
	}
	if o.KubeletPath == "" {
		o.KubeletPath = filepath.Join(base, "kubelet")
		if err := os.MkdirAll(o.KubeletPath, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if o.Log.GetSink() == nil {
		o.Log = logr.Discard()
	}
	a, err := New(o)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	if err := a.Listen(ctx); err != nil {
		cancel()
		t.Fatalf("Listen: %v", err)
	}
	r := &running{agent: a, socketDir: o.SocketDir, kubelet: o.KubeletPath, cancel: cancel, done: make(chan error, 1)}
	go func() { r.done <- a.Serve(ctx) }()
	t.Cleanup(func() { r.stop(t) })
	return r
}

// stop shuts the agent down and waits for Serve to return.
func (r *running) stop(t testing.TB) {
	if r.cancel == nil {
		return
	}
	r.cancel()
	r.cancel = nil
	if err := <-r.done; err != nil {
		t.Errorf("Serve: %v", err)
	}
}

// dial connects to the socket of an API group version.
func (r *running) dial(t testing.TB, group, version string) *grpc.ClientConn {
	t.Helper()
	conn, err := grpc.NewClient("unix://"+server.SocketPath(r.socketDir, group, version),
		grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	return conn
}

// wantStatus fails unless err has the code and its message contains msg.
func wantStatus(t testing.TB, err error, code codes.Code, msg string) {
	t.Helper()
	s, _ := status.FromError(err)
	if s.Code() != code {
		t.Fatalf("code %v (%q), want %v", s.Code(), s.Message(), code)
	}
	if !strings.Contains(s.Message(), msg) {
		t.Fatalf("message %q does not contain %q", s.Message(), msg)
	}
}
