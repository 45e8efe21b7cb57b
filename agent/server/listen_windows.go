//go:build windows

package server

import (
	"context"
	"fmt"
	"net"

	"github.com/Microsoft/go-winio"
)

func address(_ ListenOptions, group, version string) string {
	return PipePath(group, version)
}

// Listen creates the named pipe of an API group version with the configured
// security descriptor (DefaultSDDL when none is set).
func Listen(_ context.Context, o ListenOptions, group, version string) (net.Listener, error) {
	sddl := o.SDDL
	if sddl == "" {
		sddl = DefaultSDDL
	}
	path := address(o, group, version)
	l, err := winio.ListenPipe(path, &winio.PipeConfig{SecurityDescriptor: sddl})
	if err != nil {
		return nil, fmt.Errorf("listening on %s: %w", path, err)
	}
	return l, nil
}
