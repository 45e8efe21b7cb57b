//go:build windows

package identity

import (
	"context"
	"fmt"
	"net"
	"time"
	"unsafe"

	"github.com/Microsoft/go-winio"
	"golang.org/x/sys/windows"
)

func pipeDialer(path string) func(context.Context, string) (net.Conn, error) {
	return func(ctx context.Context, _ string) (net.Conn, error) { return winio.DialPipeContext(ctx, path) }
}

// DefaultCRIEndpoint is containerd's CRI pipe.
const DefaultCRIEndpoint = "npipe:////./pipe/containerd-containerd"

// winProcesses reads parents from a toolhelp snapshot and start times from
// GetProcessTimes.
type winProcesses struct{}

func hostProcesses() ProcessTable { return winProcesses{} }

func (winProcesses) Process(pid int) (int, time.Time, error) {
	snap, err := windows.CreateToolhelp32Snapshot(windows.TH32CS_SNAPPROCESS, 0)
	if err != nil {
		return 0, time.Time{}, fmt.Errorf("CreateToolhelp32Snapshot: %w", err)
	}
	defer windows.CloseHandle(snap)
	var e windows.ProcessEntry32
	e.Size = uint32(unsafe.Sizeof(e))
	ppid := -1
	for err = windows.Process32First(snap, &e); err == nil; err = windows.Process32Next(snap, &e) {
		if int(e.ProcessID) == pid {
			ppid = int(e.ParentProcessID)
			break
		}
	}
	if ppid < 0 {
		return 0, time.Time{}, fmt.Errorf("no process %d", pid)
	}
	h, err := windows.OpenProcess(windows.PROCESS_QUERY_LIMITED_INFORMATION, false, uint32(pid))
	if err != nil {
		return 0, time.Time{}, fmt.Errorf("opening process %d: %w", pid, err)
	}
	defer windows.CloseHandle(h)
	var creation, exit, kernel, user windows.Filetime
	if err := windows.GetProcessTimes(h, &creation, &exit, &kernel, &user); err != nil {
		return 0, time.Time{}, fmt.Errorf("process %d creation time: %w", pid, err)
	}
	return ppid, time.Unix(0, creation.Nanoseconds()), nil
}
