//go:build windows

package fakecri

import (
	"fmt"
	"net"
	"strings"

	"github.com/Microsoft/go-winio"
)

// Listen listens on an "npipe:////./pipe/name" endpoint (or "unix:///path").
func Listen(endpoint string) (net.Listener, error) {
	if path, ok := strings.CutPrefix(endpoint, "unix://"); ok {
		return net.Listen("unix", path)
	}
	path, ok := strings.CutPrefix(endpoint, "npipe://")
	if !ok {
		return nil, fmt.Errorf("endpoint %q: want npipe:////./pipe/name", endpoint)
	}
	return winio.ListenPipe(strings.ReplaceAll(path, "/", `\`), nil)
}
