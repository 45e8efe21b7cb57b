//go:build !windows

package fakecri

import (
	"fmt"
	"net"
	"os"
	"strings"
)

// Listen listens on a "unix:///path" endpoint.
func Listen(endpoint string) (net.Listener, error) {
	path, ok := strings.CutPrefix(endpoint, "unix://")
	if !ok {
		return nil, fmt.Errorf("endpoint %q: want unix:///path", endpoint)
	}
	_ = os.Remove(path)
	return net.Listen("unix", path)
}
