//go:build !windows

package server

import (
	"context"
	"fmt"
	"io/fs"
	"net"
	"os"

	"github.com/pipeguard/pipeguard/internal/option"
)

// OptionSocketDir is the key of ListenOptions.SocketDir in Listen's
// messages (see package option).
const OptionSocketDir = "server.socket-dir"

var socketDirOption = option.Name{Key: OptionSocketDir, Field: "ListenOptions.SocketDir"}

func address(o ListenOptions, group, version string) string {
	return SocketPath(o.SocketDir, group, version)
}

// Listen opens the unix socket of an API group version with mode 0660. A
// stale socket left by an agent that did not shut down is replaced; any other
// file at that path is an error.
func Listen(ctx context.Context, o ListenOptions, group, version string) (net.Listener, error) {
	if o.SocketDir == "" {
		return nil, option.Errorf("no socket dir: set %s", socketDirOption)
	}
	if err := os.MkdirAll(o.SocketDir, 0o750); err != nil {
		return nil, fmt.Errorf("creating socket dir: %w", err)
	}
	path := address(o, group, version)
	if fi, err := os.Lstat(path); err == nil {
		if fi.Mode()&fs.ModeSocket == 0 {
			return nil, option.Errorf("%s exists and is not a socket: remove it or choose another %s", path, socketDirOption)
		}
		if err := os.Remove(path); err != nil {
			return nil, fmt.Errorf("removing stale socket: %w", err)
		}
	}
	var lc net.ListenConfig
	l, err := lc.Listen(ctx, "unix", path)
	if err != nil {
		return nil, fmt.Errorf("listening on %s: %w", path, err)
	}
	if err := os.Chmod(path, SocketMode); err != nil {
		_ = l.Close()
		return nil, fmt.Errorf("setting mode of %s: %w", path, err)
	}
	return l, nil
}
