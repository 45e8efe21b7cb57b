package identity

import (
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/procfs"
)

// userHZ is the unit of /proc/PID/stat start times: USER_HZ is 100 on
// every Linux architecture Kubernetes runs on.
const userHZ = 100

// Proc reads process details from a procfs mount, through
// github.com/prometheus/procfs. It reads the mount's boot time once, so
// share one Proc, by pointer, among the lookups on a mount.
type Proc struct {
	// Root is the procfs mount, "/proc" on a host.
	Root string

	// boot is the boot time read from Root, once (see bootTime); zero
	// until then.
	mu   sync.Mutex
	boot time.Time
}

// open returns the procfs mount and its process pid. Its errors, like all
// of Proc's, begin with "process PID: ".
func (p *Proc) open(pid int) (procfs.FS, procfs.Proc, error) {
	mount, err := procfs.NewFS(p.Root)
	if err != nil {
		return procfs.FS{}, procfs.Proc{}, fmt.Errorf("process %d: procfs at %s cannot be read; the agent needs the host's /proc there: %w", pid, p.Root, err)
	}
	proc, err := mount.Proc(pid)
	if errors.Is(err, fs.ErrNotExist) {
		return procfs.FS{}, procfs.Proc{}, fmt.Errorf("process %d: not in %s: it has exited, or runs in a pid namespace the agent does not see", pid, p.Root)
	}
	if err != nil {
		return procfs.FS{}, procfs.Proc{}, fmt.Errorf("process %d: %w", pid, err)
	}
	return mount, proc, nil
}

// StartTime returns when process pid started: the boot time (btime of
// /proc/stat) plus its start time in clock ticks (field 22 of
// /proc/PID/stat). It adds the integers procfs parsed rather than use
// procfs.ProcStat.StartTime, whose float64 seconds can land a tick off:
// the start time is recorded to the tick (Caller.ProcessStart) and told
// apart from that of a process that reused the pid.
func (p *Proc) StartTime(pid int) (time.Time, error) {
	_, start, err := p.Process(pid)
	return start, err
}

// Process returns process pid's parent pid (field 4 of /proc/PID/stat) and
// its start time, as StartTime does, from one read of its stat file.
func (p *Proc) Process(pid int) (int, time.Time, error) {
	mount, proc, err := p.open(pid)
	if err != nil {
		return 0, time.Time{}, err
	}
	stat, err := proc.Stat()
	if err != nil {
		return 0, time.Time{}, fmt.Errorf("process %d: reading its parent and start time from %s: %w", pid, p.path(pid, "stat"), err)
	}
	boot, err := p.bootTime(mount, pid)
	if err != nil {
		return 0, time.Time{}, err
	}
	// One tick is 10ms: this stays exact for 290 years of uptime, where
	// ticks*time.Second/userHZ would overflow after 2.9.
	return stat.PPID, boot.Add(time.Duration(stat.Starttime) * (time.Second / userHZ)), nil
}

// bootTime is the boot time of p's mount, read once: /proc/stat is long
// (a line per CPU and per interrupt), a caller's ancestors are looked up
// one by one, and start times compared across lookups must share one boot
// time even if the clock is stepped.
func (p *Proc) bootTime(mount procfs.FS, pid int) (time.Time, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.boot.IsZero() {
		return p.boot, nil
	}
	t, err := p.readBootTime(mount, pid)
	if err == nil {
		p.boot = t
	}
	return t, err
}

func (p *Proc) readBootTime(mount procfs.FS, pid int) (time.Time, error) {
	stat, err := mount.Stat()
	if err != nil {
		return time.Time{}, fmt.Errorf("process %d: reading the boot time from %s: %w", pid, filepath.Join(p.Root, "stat"), err)
	}
	// procfs leaves BootTime zero when the file has no btime line.
	if stat.BootTime == 0 {
		return time.Time{}, fmt.Errorf("process %d: %s has no btime line, so its start time is unknown; is %s the host's procfs?", pid, filepath.Join(p.Root, "stat"), p.Root)
	}
	return time.Unix(int64(stat.BootTime), 0), nil
}

// CgroupPaths returns the paths of process pid's cgroups, one per
// hierarchy (a single one under cgroup v2), from /proc/PID/cgroup.
func (p *Proc) CgroupPaths(pid int) ([]string, error) {
	_, proc, err := p.open(pid)
	if err != nil {
		return nil, err
	}
	cgroups, err := proc.Cgroups()
	if err != nil {
		return nil, fmt.Errorf("process %d: reading its cgroups from %s: %w", pid, p.path(pid, "cgroup"), err)
	}
	paths := make([]string, len(cgroups))
	for i, cg := range cgroups {
		paths[i] = cg.Path
	}
	return paths, nil
}

func (p *Proc) path(pid int, name string) string {
	return filepath.Join(p.Root, strconv.Itoa(pid), name)
}

// Describe fills in a caller's process start time and container from procfs.
func (p *Proc) Describe(c *Caller) error {
	start, err := p.StartTime(c.PID)
	if err != nil {
		return err
	}
	c.ProcessStart = start.UTC().Format("2006-01-02T15:04:05.00Z07:00")
	paths, err := p.CgroupPaths(c.PID)
	if err != nil {
		return err
	}
	c.ContainerID, c.Runtime, c.PodUID = "", "", ""
	ct, ok, err := containerOf(paths)
	if err != nil {
		// Not an error of the caller's identity: who it is stands; where
		// it runs does not, and the record says so.
		c.PodMapped, c.Unattributed = false, err.Error()
		c.Notes = append(c.Notes, err.Error())
		return nil
	}
	c.PodMapped, c.Unattributed = true, ""
	if ok {
		c.ContainerID, c.Runtime, c.PodUID = ct.ID, ct.Runtime, ct.PodUID
	}
	return nil
}
