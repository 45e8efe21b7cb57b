//go:build linux

package identity

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"time"
)

func hostProcesses() ProcessTable { return procTable{Proc{Root: "/proc"}} }

// procTable reads parents from /proc/PID/stat and start times with Proc.
type procTable struct{ p Proc }

func (t procTable) Process(pid int) (int, time.Time, error) {
	b, err := os.ReadFile(filepath.Join(t.p.Root, strconv.Itoa(pid), "stat"))
	if err != nil {
		return 0, time.Time{}, err
	}
	// The command name (field 2) is in parentheses and may hold spaces;
	// field 4 is the parent pid.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, time.Time{}, fmt.Errorf("/proc/%d/stat has no command name", pid)
	}
	f := bytes.Fields(b[i+1:])
	if len(f) < 2 {
		return 0, time.Time{}, fmt.Errorf("/proc/%d/stat has no parent pid", pid)
	}
	ppid, err := strconv.Atoi(string(f[1]))
	if err != nil {
		return 0, time.Time{}, fmt.Errorf("/proc/%d/stat parent pid: %w", pid, err)
	}
	start, err := t.p.StartTime(pid)
	return ppid, start, err
}
