//go:build !linux && !windows

package identity

import (
	"fmt"
	"net"
	"runtime"
)

// Peer is not implemented on this OS: pipeguard-agent runs on Windows nodes
// and is tested on Linux.
func Peer(net.Conn) (*Caller, func(), error) {
	return nil, nil, fmt.Errorf("caller identity is not implemented on %s", runtime.GOOS)
}

// hostPeer is the PeerFunc of this OS.
func hostPeer() PeerFunc { return Peer }

// peerWith is the PeerFunc of this OS; it keeps no process table.
func peerWith(ProcessTable) PeerFunc { return Peer }
