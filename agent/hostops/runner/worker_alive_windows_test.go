package runner

import (
	"testing"

	"golang.org/x/sys/windows"
)

// stillActive is GetExitCodeProcess's code for a process that runs.
const stillActive = 259

// processAlive reports whether the process runs.
func processAlive(pid int) bool {
	h, err := windows.OpenProcess(windows.PROCESS_QUERY_LIMITED_INFORMATION, false, uint32(pid))
	if err != nil {
		return false
	}
	defer windows.CloseHandle(h)
	var code uint32
	if err := windows.GetExitCodeProcess(h, &code); err != nil {
		return false
	}
	return code == stillActive
}

// killProcess kills the process from outside the pool.
func killProcess(t *testing.T, pid int) {
	t.Helper()
	h, err := windows.OpenProcess(windows.PROCESS_TERMINATE, false, uint32(pid))
	if err != nil {
		t.Fatal(err)
	}
	defer windows.CloseHandle(h)
	if err := windows.TerminateProcess(h, 9); err != nil {
		t.Fatal(err)
	}
}
