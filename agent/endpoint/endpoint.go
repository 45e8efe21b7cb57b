package endpoint

import "google.golang.org/grpc"

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
