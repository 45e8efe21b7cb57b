package compare

import (
	"errors"
	"fmt"
)

// DefaultPipePrefix is the prefix of CSI Proxy's pipe names:
// \\.\pipe\csi-proxy-<group>-<version>.
const DefaultPipePrefix = "csi-proxy-"

// PipePath is the pipe of group's compared version under prefix.
func PipePath(prefix, group string) string {
	return `\\.\pipe\` + prefix + group + "-" + Versions[group]
}

// UnreachableError says a CSI Proxy pipe could not be opened.
type UnreachableError struct {
	Pipe string
	Err  error
}

func (e *UnreachableError) Error() string {
	return fmt.Sprintf("no CSI Proxy on %s: is CSI Proxy running? (sc.exe query csiproxy, or its DaemonSet's pods on this node) (%v)", e.Pipe, e.Err)
}

func (e *UnreachableError) Unwrap() error { return e.Err }

// ErrNeedsWindows is DialCSIProxy's answer off Windows: CSI Proxy serves
// named pipes.
var ErrNeedsWindows = errors.New("pipeguard-agent compare needs Windows: it reads CSI Proxy's named pipes on the node")
