package server

import (
	"errors"
	"net"
)

type netListener = net.Listener

// countingListener counts Close calls.
type countingListener struct{ closed *int }

func (l *countingListener) Accept() (net.Conn, error) { return nil, errors.New("closed") }
func (l *countingListener) Close() error              { *l.closed++; return nil }
func (l *countingListener) Addr() net.Addr            { return &net.UnixAddr{Name: "x", Net: "unix"} }
