package server

import (
	"net"
	"syscall"
	"testing"
)

type fdConn struct{ net.Conn }

func (fdConn) Fd() uintptr { return 7 }

type bothConn struct{ fdConn }

func (bothConn) SyscallConn() (syscall.RawConn, error) { return nil, nil }

// TestWithReleaseKeepsTheDescriptor: peer identification reads the
// descriptor of the accepted connection (SyscallConn on unix sockets, Fd on
// named pipes), so the wrapper that gives a place back must keep both.
func TestWithReleaseKeepsTheDescriptor(t *testing.T) {
	a, b := net.Pipe()
	defer b.Close()
	for name, c := range map[string]net.Conn{"fd": fdConn{a}, "both": bothConn{fdConn{a}}, "plain": a} {
		released := 0
		w := withRelease(c, func() { released++ })
		_, sys := w.(syscall.Conn)
		_, fd := w.(interface{ Fd() uintptr })
		_, wantSys := c.(syscall.Conn)
		_, wantFd := c.(interface{ Fd() uintptr })
		if sys != wantSys || fd != wantFd {
			t.Errorf("%s: wrapped conn has SyscallConn=%v Fd=%v, want %v %v", name, sys, fd, wantSys, wantFd)
		}
		_ = w.Close()
		_ = w.Close()
		if released != 1 {
			t.Errorf("%s: released %d times on two closes, want once", name, released)
		}
	}
}
