//go:build linux

package identity

import (
	"errors"
	"fmt"
	"net"
	"syscall"

	"golang.org/x/sys/unix"
)

// Peer identifies the process at the other end of a unix socket: its
// SO_PEERCRED credentials, then its start time and cgroup from /proc. When
// the kernel offers SO_PEERPIDFD, the process is pinned while /proc is read
// and must still be alive afterwards, so the details cannot come from a
// process that reused its pid.
//
// Peer reads the boot time of /proc on each call; the agent's own
// identification goes through one Proc (Proc.Peer), so that a process's
// start time is the same on every connection.
func Peer(conn net.Conn) (*Caller, func(), error) {
	return (&Proc{Root: "/proc"}).Peer(conn)
}

// Peer identifies the process at the other end of a unix socket, as the
// function Peer does, with the details read from p.
func (p *Proc) Peer(conn net.Conn) (*Caller, func(), error) {
	return linuxPeer(conn, p)
}

// hostPeer is the PeerFunc of this OS, with the state it keeps: one Proc
// for /proc.
func hostPeer() PeerFunc { return (&Proc{Root: "/proc"}).Peer }

// peerWith is the PeerFunc of this OS that reads processes from t, so that
// its start times and t's agree; hostPeer when t is no Proc.
func peerWith(t ProcessTable) PeerFunc {
	if p, ok := t.(*Proc); ok {
		return p.Peer
	}
	return hostPeer()
}

func linuxPeer(conn net.Conn, proc *Proc) (*Caller, func(), error) {
	sc, ok := conn.(syscall.Conn)
	if !ok {
		return nil, nil, fmt.Errorf("connection %T is not a socket", conn)
	}
	raw, err := sc.SyscallConn()
	if err != nil {
		return nil, nil, err
	}
	var (
		cred    *unix.Ucred
		credErr error
		pidfd   = -1
	)
	if err := raw.Control(func(fd uintptr) {
		cred, credErr = unix.GetsockoptUcred(int(fd), unix.SOL_SOCKET, unix.SO_PEERCRED)
		if credErr == nil {
			if p, err := unix.GetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_PEERPIDFD); err == nil {
				pidfd = p
			}
		}
	}); err != nil {
		return nil, nil, err
	}
	if credErr != nil {
		return nil, nil, fmt.Errorf("SO_PEERCRED: %w", credErr)
	}
	if pidfd >= 0 {
		defer unix.Close(pidfd)
	}
	c := &Caller{Source: SourcePeer, PID: int(cred.Pid), UID: int64(cred.Uid), GID: int64(cred.Gid)}
	if c.PID == 0 {
		c.Notes = append(c.Notes, "the caller's pid is not visible from the agent's pid namespace")
		return c, nil, nil
	}
	if err := proc.Describe(c); err != nil {
		return nil, nil, err
	}
	if pidfd < 0 {
		c.Notes = append(c.Notes, "kernel without SO_PEERPIDFD: the process was not pinned while /proc was read")
		return c, nil, nil
	}
	if err := unix.PidfdSendSignal(pidfd, 0, nil, 0); err != nil {
		if errors.Is(err, unix.ESRCH) {
			return nil, nil, fmt.Errorf("process %d exited before its identity was established", c.PID)
		}
		return nil, nil, fmt.Errorf("checking that process %d is still alive: %w", c.PID, err)
	}
	return c, nil, nil
}
