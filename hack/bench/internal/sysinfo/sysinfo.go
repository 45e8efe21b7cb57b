// Package sysinfo reads what the benchmark tools record about the machine
// and about the processes they measure: cores, CPU model, load average, and
// a process's CPU time and resident memory from /proc. Where /proc is
// missing the values are zero or "unknown".
package sysinfo

import (
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	"github.com/prometheus/procfs"
)

// Machine describes where benchmarks ran.
type Machine struct {
	Cores       int    `json:"cores"`
	GOMAXPROCS  int    `json:"gomaxprocs"`
	CPUModel    string `json:"cpuModel"`
	GoVersion   string `json:"goVersion"`
	OS          string `json:"os"`
	Arch        string `json:"arch"`
	LoadAverage string `json:"loadAverage"` // 1, 5 and 15 minutes, when described
	Date        string `json:"date"`        // when, in UTC, RFC 3339
}

// Describe describes this machine now.
func Describe() Machine {
	return Machine{
		Cores: runtime.NumCPU(), GOMAXPROCS: runtime.GOMAXPROCS(0), CPUModel: CPUModel(),
		GoVersion: runtime.Version(), OS: runtime.GOOS, Arch: runtime.GOARCH,
		LoadAverage: LoadAverage(), Date: time.Now().UTC().Format(time.RFC3339),
	}
}

// CPUModel is the first "model name" of /proc/cpuinfo, or "unknown".
func CPUModel() string {
	b, _ := os.ReadFile("/proc/cpuinfo")
	for line := range strings.SplitSeq(string(b), "\n") {
		if name, value, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(name) == "model name" {
			return strings.TrimSpace(value)
		}
	}
	return "unknown"
}

// LoadAverage is the 1, 5 and 15 minute load average, or "unknown".
func LoadAverage() string {
	b, _ := os.ReadFile("/proc/loadavg")
	if f := strings.Fields(string(b)); len(f) >= 3 {
		return strings.Join(f[:3], " ")
	}
	return "unknown"
}

// PeakRSS reads VmHWM (peak RSS) of process pid from /proc/<pid>/status;
// it returns zero where there is no such file.
func PeakRSS(pid int) int64 {
	if p, err := procfs.NewProc(pid); err == nil {
		if s, err := p.NewStatus(); err == nil {
			return int64(s.VmHWM)
		}
	}
	return 0
}

// CPUTime is the user and system CPU time of process pid so far, from
// /proc/<pid>/stat, or zero where there is no such file.
func CPUTime(pid int) time.Duration {
	if p, err := procfs.NewProc(pid); err == nil {
		if s, err := p.Stat(); err == nil {
			// utime and stime are in ticks of 1/100 s (USER_HZ).
			return time.Duration(s.UTime+s.STime) * 10 * time.Millisecond
		}
	}
	return 0
}

// Filesystem is the type of the file system holding path (ext4, tmpfs…),
// from the longest matching mount point in /proc/self/mounts, or "unknown".
func Filesystem(path string) string {
	abs, err := filepath.Abs(path)
	if err != nil {
		return "unknown"
	}
	if p, err := filepath.EvalSymlinks(abs); err == nil {
		abs = p
	}
	b, _ := os.ReadFile("/proc/self/mounts")
	return filesystemOf(abs, string(b))
}

func filesystemOf(path, mounts string) string {
	best, fstype := -1, "unknown"
	for line := range strings.SplitSeq(mounts, "\n") {
		f := strings.Fields(line)
		if len(f) < 3 {
			continue
		}
		mp := strings.ReplaceAll(f[1], `\040`, " ")
		inside := path == mp || mp == "/" || strings.HasPrefix(path, mp+"/")
		// A later mount on the same point hides an earlier one.
		if inside && len(mp) >= best {
			best, fstype = len(mp), f[2]
		}
	}
	return fstype
}
