//go:build !windows

package identity

import (
	"context"
	"errors"
	"net"
)

func pipeDialer(string) func(context.Context, string) (net.Conn, error) {
	return func(context.Context, string) (net.Conn, error) {
		return nil, errors.New("named pipe CRI endpoints exist on Windows only")
	}
}

// DefaultCRIEndpoint is containerd's CRI socket.
const DefaultCRIEndpoint = "unix:///run/containerd/containerd.sock"
