package identity

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync"

	"github.com/go-logr/logr"
	"google.golang.org/grpc/credentials"
)

// PeerFunc establishes the identity of the process at the other end of an
// accepted connection. release, when not nil, is called once the connection
// closes (Windows holds a process handle until then).
type PeerFunc func(conn net.Conn) (c *Caller, release func(), err error)

// Credentials are server-side gRPC transport credentials that establish
// the caller's identity when a connection is accepted. A connection whose
// caller cannot be identified is refused.
type Credentials struct {
	peer PeerFunc
	log  logr.Logger
}

// NewCredentials returns credentials using peer; nil means this OS's peer
// credentials (Peer).
func NewCredentials(log logr.Logger, peer PeerFunc) *Credentials {
	if peer == nil {
		peer = hostPeer()
	}
	return &Credentials{peer: peer, log: log}
}

// ServerHandshake identifies the caller; it exchanges no bytes.
func (c *Credentials) ServerHandshake(conn net.Conn) (net.Conn, credentials.AuthInfo, error) {
	caller, release, err := c.peer(conn)
	if err != nil {
		c.log.Error(err, "refusing a connection whose caller cannot be identified")
		return nil, nil, fmt.Errorf("identifying the caller: %w", err)
	}
	if release != nil {
		conn = &releasingConn{Conn: conn, release: release}
	}
	// Pipes and unix sockets do not leave the host.
	return conn, AuthInfo{CommonAuthInfo: credentials.CommonAuthInfo{SecurityLevel: credentials.PrivacyAndIntegrity}, Caller: caller}, nil
}

// ClientHandshake is not supported: these are server credentials.
func (c *Credentials) ClientHandshake(context.Context, string, net.Conn) (net.Conn, credentials.AuthInfo, error) {
	return nil, nil, errors.New("pipeguard identity credentials are for servers only")
}

// Info implements credentials.TransportCredentials.
func (c *Credentials) Info() credentials.ProtocolInfo {
	return credentials.ProtocolInfo{SecurityProtocol: "pipeguard-peer"}
}

// Clone implements credentials.TransportCredentials.
func (c *Credentials) Clone() credentials.TransportCredentials {
	return &Credentials{peer: c.peer, log: c.log}
}

// OverrideServerName implements credentials.TransportCredentials.
func (c *Credentials) OverrideServerName(string) error { return nil }

type releasingConn struct {
	net.Conn
	once    sync.Once
	release func()
}

func (c *releasingConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(c.release)
	return err
}
