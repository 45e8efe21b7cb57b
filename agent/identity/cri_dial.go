package identity

import (
	"context"
	"fmt"
	"net"
	"strings"
)

// criDialer returns the dialer and gRPC target of a CRI endpoint.
func criDialer(endpoint string) (func(context.Context, string) (net.Conn, error), string, error) {
	if path, ok := strings.CutPrefix(endpoint, "unix://"); ok && path != "" {
		return func(ctx context.Context, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, "unix", path)
		}, "passthrough:///cri", nil
	}
	if path, ok := strings.CutPrefix(endpoint, "npipe://"); ok && path != "" {
		return pipeDialer(strings.ReplaceAll(path, "/", `\`)), "passthrough:///cri", nil
	}
	return nil, "", fmt.Errorf("CRI endpoint %q: %w", endpoint, errBadEndpoint)
}
