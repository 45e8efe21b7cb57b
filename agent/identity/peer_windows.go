//go:build windows

package identity

import (
	"errors"
	"fmt"
	"net"
	"runtime"
	"time"
	"unsafe"

	"golang.org/x/sys/windows"
)

// Peer identifies the client of a named pipe (see windowsCaller).
func Peer(conn net.Conn) (*Caller, func(), error) {
	fd, ok := conn.(interface{ Fd() uintptr })
	if !ok {
		return nil, nil, fmt.Errorf("connection %T is not a named pipe", conn)
	}
	return windowsCaller(newWinAPI(), fd.Fd())
}

type winAPI struct {
	impersonate *windows.LazyProc
}

func newWinAPI() winAPI {
	return winAPI{impersonate: windows.NewLazySystemDLL("advapi32.dll").NewProc("ImpersonateNamedPipeClient")}
}

func (winAPI) ClientProcessID(pipe uintptr) (uint32, error) {
	var pid uint32
	err := windows.GetNamedPipeClientProcessId(windows.Handle(pipe), &pid)
	return pid, err
}

func (winAPI) OpenProcess(pid uint32) (uintptr, error) {
	h, err := windows.OpenProcess(windows.PROCESS_QUERY_LIMITED_INFORMATION, false, pid)
	return uintptr(h), err
}

func (winAPI) CloseProcess(p uintptr) { _ = windows.CloseHandle(windows.Handle(p)) }

func (winAPI) ProcessStart(p uintptr) (time.Time, error) {
	var creation, exit, kernel, user windows.Filetime
	if err := windows.GetProcessTimes(windows.Handle(p), &creation, &exit, &kernel, &user); err != nil {
		return time.Time{}, err
	}
	return time.Unix(0, creation.Nanoseconds()), nil
}

// ClientSID impersonates the pipe client on a locked OS thread, reads the
// thread token's user and reverts. A thread that cannot revert is never
// unlocked, so the runtime discards it instead of reusing it.
func (a winAPI) ClientSID(pipe uintptr) (string, error) {
	runtime.LockOSThread()
	if r, _, err := a.impersonate.Call(pipe); r == 0 {
		runtime.UnlockOSThread()
		return "", fmt.Errorf("ImpersonateNamedPipeClient: %w", err)
	}
	var tok windows.Token
	err := windows.OpenThreadToken(windows.CurrentThread(), windows.TOKEN_QUERY, true, &tok)
	var sid string
	if err == nil {
		var level uint32
		var n uint32
		if lerr := windows.GetTokenInformation(tok, windows.TokenImpersonationLevel, (*byte)(unsafe.Pointer(&level)), 4, &n); lerr == nil && level == windows.SecurityAnonymous {
			err = ErrAnonymous
		} else if u, uerr := tok.GetTokenUser(); uerr != nil {
			err = uerr
		} else {
			sid = u.User.Sid.String()
		}
		tok.Close()
	} else if errors.Is(err, windows.ERROR_CANT_OPEN_ANONYMOUS) {
		err = ErrAnonymous
	}
	if rerr := windows.RevertToSelf(); rerr != nil {
		return "", fmt.Errorf("RevertToSelf after impersonating the pipe client: %w", rerr)
	}
	runtime.UnlockOSThread()
	return sid, err
}

func (winAPI) ProcessSID(p uintptr) (string, error) {
	var tok windows.Token
	if err := windows.OpenProcessToken(windows.Handle(p), windows.TOKEN_QUERY, &tok); err != nil {
		return "", err
	}
	defer tok.Close()
	u, err := tok.GetTokenUser()
	if err != nil {
		return "", err
	}
	return u.User.Sid.String(), nil
}

// hostPeer is the PeerFunc of this OS.
func hostPeer() PeerFunc { return Peer }

// peerWith is the PeerFunc of this OS; it keeps no process table.
func peerWith(ProcessTable) PeerFunc { return Peer }
