package identity

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// userHZ is the unit of /proc/PID/stat start times: USER_HZ is 100 on
// every Linux architecture Kubernetes runs on.
const userHZ = 100

// Proc reads process details from a procfs mount.
type Proc struct {
	// Root is the procfs mount, "/proc" on a host.
	Root string
}

// StartTime returns when process pid started: boot time plus field 22 of
// /proc/PID/stat.
func (p Proc) StartTime(pid int) (time.Time, error) {
	b, err := os.ReadFile(filepath.Join(p.Root, strconv.Itoa(pid), "stat"))
	if err != nil {
		return time.Time{}, err
	}
	// The command name (field 2) is in parentheses and may hold spaces.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return time.Time{}, fmt.Errorf("/proc/%d/stat has no command name", pid)
	}
	fields := strings.Fields(string(b[i+1:]))
	// fields[0] is field 3 (state); starttime is field 22.
	if len(fields) < 20 {
		return time.Time{}, fmt.Errorf("/proc/%d/stat has %d fields, want at least 22", pid, len(fields)+2)
	}
	ticks, err := strconv.ParseUint(fields[19], 10, 64)
	if err != nil {
		return time.Time{}, fmt.Errorf("/proc/%d/stat start time: %w", pid, err)
	}
	boot, err := p.bootTime()
	if err != nil {
		return time.Time{}, err
	}
	return boot.Add(time.Duration(ticks) * time.Second / userHZ), nil
}

func (p Proc) bootTime() (time.Time, error) {
	b, err := os.ReadFile(filepath.Join(p.Root, "stat"))
	if err != nil {
		return time.Time{}, err
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "btime "); ok {
			s, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
			if err != nil {
				return time.Time{}, fmt.Errorf("/proc/stat btime: %w", err)
			}
			return time.Unix(s, 0), nil
		}
	}
	return time.Time{}, fmt.Errorf("/proc/stat has no btime line")
}

// Cgroup returns the content of /proc/PID/cgroup.
func (p Proc) Cgroup(pid int) (string, error) {
	b, err := os.ReadFile(filepath.Join(p.Root, strconv.Itoa(pid), "cgroup"))
	return string(b), err
}

// Describe fills in a caller's process start time and container from procfs.
func (p Proc) Describe(c *Caller) error {
	start, err := p.StartTime(c.PID)
	if err != nil {
		return fmt.Errorf("process %d: %w", c.PID, err)
	}
	c.ProcessStart = start.UTC().Format("2006-01-02T15:04:05.00Z07:00")
	cg, err := p.Cgroup(c.PID)
	if err != nil {
		return fmt.Errorf("process %d: %w", c.PID, err)
	}
	c.PodMapped = true
	if ct, ok := ParseCgroup(cg); ok {
		c.ContainerID, c.Runtime, c.PodUID = ct.ID, ct.Runtime, ct.PodUID
	}
	return nil
}
