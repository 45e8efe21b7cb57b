package server

import (
	"context"
	"net"
	"testing"

	"github.com/Microsoft/go-winio"

	"github.com/pipeguard/pipeguard/internal/testing/platform"
	"google.golang.org/grpc"
)

// fsv1Address is the base name of filesystem v1's address.
const fsv1Address = "csi-proxy-filesystem-v1"

// dialTarget is the gRPC target of a named pipe, passed as is to the dialer.
func dialTarget(address string) string { return "passthrough:///" + address }

// skipInProcessPipes skips a test whose client and server share a process
// when it runs under Wine: there, a go-winio client's writes to a pipe its
// own process serves never reach the server. test/wine calls the agent's
// pipes from another process, as drivers do.
func skipInProcessPipes(t *testing.T) {
	t.Helper()
	if platform.UnderWine() {
		t.Skip("under Wine, a named pipe served and dialled in one process does not carry data; test/wine covers the pipes across processes")
	}
}

// dialOptions dial named pipes with go-winio, as the CSI Proxy client does.
func dialOptions() []grpc.DialOption {
	return []grpc.DialOption{grpc.WithContextDialer(func(ctx context.Context, address string) (net.Conn, error) {
		return winio.DialPipeContext(ctx, address)
	})}
}
