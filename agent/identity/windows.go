package identity

import (
	"errors"
	"fmt"
	"time"
)

// ErrAnonymous is returned by WinAPI.ClientSID when the client dialed the
// pipe at anonymous impersonation level, so its token names nobody.
var ErrAnonymous = errors.New("client dialed at anonymous impersonation level")

// WinAPI is the handful of Windows calls that identify a pipe client. The
// real one is in peer_windows.go; the logic around it (windowsCaller) is
// tested on every OS through a fake.
type WinAPI interface {
	// ClientProcessID is GetNamedPipeClientProcessId.
	ClientProcessID(pipe uintptr) (uint32, error)
	// OpenProcess opens a query handle to the process, which keeps its pid
	// from being reused until CloseProcess.
	OpenProcess(pid uint32) (uintptr, error)
	CloseProcess(process uintptr)
	// ProcessStart is the process creation time.
	ProcessStart(process uintptr) (time.Time, error)
	// ClientSID is the user SID of the client's impersonation token, or
	// ErrAnonymous.
	ClientSID(pipe uintptr) (string, error)
	// ProcessSID is the user SID of the process token.
	ProcessSID(process uintptr) (string, error)
}

// windowsCaller identifies the client of a named pipe. The process handle it
// opens is released with the connection.
func windowsCaller(api WinAPI, pipe uintptr) (*Caller, func(), error) {
	pid, err := api.ClientProcessID(pipe)
	if err != nil {
		return nil, nil, fmt.Errorf("GetNamedPipeClientProcessId: %w", err)
	}
	proc, err := api.OpenProcess(pid)
	if err != nil {
		return nil, nil, fmt.Errorf("opening client process %d: %w", pid, err)
	}
	release := func() { api.CloseProcess(proc) }
	c := &Caller{Source: SourcePeer, PID: int(pid), UID: -1, GID: -1}
	start, err := api.ProcessStart(proc)
	if err != nil {
		release()
		return nil, nil, fmt.Errorf("client process %d creation time: %w", pid, err)
	}
	c.ProcessStart = start.UTC().Format(time.RFC3339Nano)
	switch sid, err := api.ClientSID(pipe); {
	case err == nil:
		c.SID, c.SIDSource = sid, "client-token"
	case errors.Is(err, ErrAnonymous):
		c.Notes = append(c.Notes, "the client dialed at anonymous impersonation level, so its pipe token names no user; the SID is its process token's")
	default:
		c.Notes = append(c.Notes, "the client's impersonation token could not be read ("+err.Error()+"); the SID is its process token's")
	}
	if c.SID == "" {
		if sid, err := api.ProcessSID(proc); err == nil {
			c.SID, c.SIDSource = sid, "process-token"
		} else {
			c.Notes = append(c.Notes, "the client's process token could not be read ("+err.Error()+"): no SID")
		}
	}
	// WithCRI replaces this note with the CRI mapping or why it failed.
	c.Notes = append(c.Notes, noteNoCRI)
	return c, release, nil
}
