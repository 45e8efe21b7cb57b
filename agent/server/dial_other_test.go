//go:build !windows

package server

import (
	"testing"

	"google.golang.org/grpc"
)

// fsv1Address is the base name of filesystem v1's address.
const fsv1Address = "csi-proxy-filesystem-v1.sock"

// dialTarget is the gRPC target of a socket address.
func dialTarget(address string) string { return "unix://" + address }

// dialOptions are the options that reach a socket: none beyond the defaults.
func dialOptions() []grpc.DialOption { return nil }

// skipInProcessPipes has nothing to skip off Windows.
func skipInProcessPipes(*testing.T) {}
