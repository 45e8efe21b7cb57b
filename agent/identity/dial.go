package identity

import (
	"context"
	"fmt"
	"os"
	"strings"

	"google.golang.org/grpc"
)

// DefaultTokenAudience is the audience pipeguard-agent verifies tokens for
// unless TokenOptions.Audience says otherwise.
const DefaultTokenAudience = "pipeguard-agent"

// WithServiceAccountToken is a dial option for CSI drivers that want to
// identify their pod with a projected ServiceAccount token: every call
// carries the token read from path (the projected volume file, which the
// kubelet rotates) as "authorization: Bearer <token>".
func WithServiceAccountToken(path string) grpc.DialOption {
	return grpc.WithPerRPCCredentials(tokenFile(path))
}

type tokenFile string

func (p tokenFile) GetRequestMetadata(context.Context, ...string) (map[string]string, error) {
	b, err := os.ReadFile(string(p))
	if err != nil {
		return nil, fmt.Errorf("reading the ServiceAccount token for pipeguard-agent: %w", err)
	}
	return map[string]string{"authorization": "Bearer " + strings.TrimSpace(string(b))}, nil
}

// RequireTransportSecurity is false: pipes and unix sockets stay on the host.
func (tokenFile) RequireTransportSecurity() bool { return false }

// BearerToken returns the token of an "authorization: Bearer" value.
func BearerToken(values []string) (string, bool) {
	if len(values) != 1 {
		return "", false
	}
	tok, ok := strings.CutPrefix(values[0], "Bearer ")
	tok = strings.TrimSpace(tok)
	return tok, ok && tok != ""
}
