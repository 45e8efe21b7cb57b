package server

// Connection places: every endpoint holds at most MaxConnectionsPerEndpoint
// open connections, at most MaxConnectionsPerCaller of them one caller's.

import (
	"fmt"
	"net"
	"sync"
	"syscall"

	"github.com/go-logr/logr"
	"google.golang.org/grpc/credentials"
)

// placedListener accepts a connection only while the endpoint has a free
// place; each connection gives its place back when it closes. While every
// place is taken, Accept waits, so new connections wait outside the agent
// (in the kernel's backlog, or as a busy pipe) and cost it nothing.
type placedListener struct {
	net.Listener
	places chan struct{}
	closed chan struct{}
	once   sync.Once
}

func newPlacedListener(l net.Listener, places int) *placedListener {
	return &placedListener{Listener: l, places: make(chan struct{}, places), closed: make(chan struct{})}
}

func (l *placedListener) Accept() (net.Conn, error) {
	select {
	case l.places <- struct{}{}:
	case <-l.closed:
		return nil, net.ErrClosed
	}
	c, err := l.Listener.Accept()
	if err != nil {
		<-l.places
		return nil, err
	}
	return withRelease(c, func() { <-l.places }), nil
}

func (l *placedListener) Close() error {
	l.once.Do(func() { close(l.closed) })
	return l.Listener.Close()
}

// withRelease returns c, calling release once when it is first closed. The
// result keeps c's access to its descriptor (syscall.Conn on unix sockets,
// Fd on named pipes), which peer identification needs.
func withRelease(c net.Conn, release func()) net.Conn {
	r := &releasing{Conn: c, release: release}
	_, sys := c.(syscall.Conn)
	_, fd := c.(interface{ Fd() uintptr })
	switch {
	case sys && fd:
		return &releasingBoth{releasingSyscall{r}}
	case sys:
		return &releasingSyscall{r}
	case fd:
		return &releasingFd{r}
	}
	return r
}

type releasing struct {
	net.Conn
	once    sync.Once
	release func()
}

func (c *releasing) Close() error {
	err := c.Conn.Close()
	c.once.Do(c.release)
	return err
}

type releasingSyscall struct{ *releasing }

func (c *releasingSyscall) SyscallConn() (syscall.RawConn, error) {
	return c.Conn.(syscall.Conn).SyscallConn()
}

type releasingFd struct{ *releasing }

type releasingBoth struct{ releasingSyscall }

func (c *releasingBoth) Fd() uintptr { return c.Conn.(interface{ Fd() uintptr }).Fd() }

func (c *releasingFd) Fd() uintptr { return c.Conn.(interface{ Fd() uintptr }).Fd() }

// CallerKeyer is implemented by the AuthInfo of transport credentials that
// identify callers (package identity): the key names the caller whose
// connections share MaxConnectionsPerCaller.
type CallerKeyer interface {
	ConnectionKey() string
}

// callerPlaces wraps transport credentials: past MaxConnectionsPerCaller
// open connections of one caller on the endpoint, a new connection of that
// caller is closed right after its handshake.
type callerPlaces struct {
	credentials.TransportCredentials
	max      int
	log      logr.Logger
	address  string
	refused  func()
	mu       sync.Mutex
	held     map[string]int
	refusing map[string]bool // logged once until the caller is below the bound again
}

func newCallerPlaces(c credentials.TransportCredentials, max int, log logr.Logger, address string, refused func()) *callerPlaces {
	return &callerPlaces{TransportCredentials: c, max: max, log: log, address: address, refused: refused,
		held: map[string]int{}, refusing: map[string]bool{}}
}

func (p *callerPlaces) ServerHandshake(raw net.Conn) (net.Conn, credentials.AuthInfo, error) {
	conn, ai, err := p.TransportCredentials.ServerHandshake(raw)
	if err != nil {
		return nil, nil, err
	}
	k, ok := ai.(CallerKeyer)
	if !ok {
		return conn, ai, nil
	}
	key := k.ConnectionKey()
	p.mu.Lock()
	if p.held[key] >= p.max {
		first := !p.refusing[key]
		p.refusing[key] = true
		p.mu.Unlock()
		_ = conn.Close()
		if p.refused != nil {
			p.refused()
		}
		err := fmt.Errorf("caller %s already holds %d connections to %s, the most one caller may hold (MaxConnectionsPerCaller); the new connection is closed", key, p.max, p.address)
		if first {
			p.log.Error(err, "refusing a connection", "caller", key, keyAddress, p.address)
		}
		return nil, nil, err
	}
	p.held[key]++
	p.mu.Unlock()
	return withRelease(conn, func() {
		p.mu.Lock()
		defer p.mu.Unlock()
		if p.held[key]--; p.held[key] <= 0 {
			delete(p.held, key)
		}
		delete(p.refusing, key)
	}), ai, nil
}

// Clone keeps the places shared: gRPC may clone credentials, and a clone
// must not give a caller a second set of places.
func (p *callerPlaces) Clone() credentials.TransportCredentials { return p }
