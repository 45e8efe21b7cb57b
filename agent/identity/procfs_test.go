package identity

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// fakeProcfs lays out a procfs tree; files maps paths below the root to
// their content.
func fakeProcfs(t *testing.T, files map[string]string) string {
	t.Helper()
	root := t.TempDir()
	for name, content := range files {
		p := filepath.Join(root, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

// procStat is a /proc/PID/stat line, as the kernel writes it, whose
// command name holds spaces and parentheses and whose start time is ticks.
func procStat(pid int, ticks uint64) string {
	return strconv.Itoa(pid) + " (csi (node) x) S 1 77 77 0 -1 4194560 1 0 0 0 0 0 0 0 20 0 1 0 " + strconv.FormatUint(ticks, 10) +
		" 1000 100 18446744073709551615 0 0 0 0 0 0 0 0 0 0 0 0 17 0 0 0 0 0 0 0 0 0 0 0 0 0 0\n"
}

const (
	bootLine    = "cpu  1 2 3 4 5 6 7 8 9 10\ncpu0 1 2 3 4 5 6 7 8 9 10\nintr 1 2 3\nctxt 9\nbtime 1740816000\nprocesses 9\n"
	bootTime    = 1740816000
	podCgroupV2 = "0::/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod" + podSys + ".slice/cri-containerd-" + cid + ".scope\n"
)

func TestProcStartTime(t *testing.T) {
	// Four years of uptime at 100 ticks a second: beyond what
	// ticks*time.Second fits in a time.Duration.
	const years4 = 4 * 365 * 24 * 3600 * userHZ
	for name, tc := range map[string]struct {
		ticks uint64
		want  time.Time
	}{
		"just after boot":      {ticks: 0, want: time.Unix(bootTime, 0)},
		"to the tick":          {ticks: 12345, want: time.Unix(bootTime+123, 450_000_000)},
		"four years of uptime": {ticks: years4 + 7, want: time.Unix(bootTime+years4/userHZ, 70_000_000)},
	} {
		t.Run(name, func(t *testing.T) {
			root := fakeProcfs(t, map[string]string{"stat": bootLine, "77/stat": procStat(77, tc.ticks)})
			got, err := (&Proc{Root: root}).StartTime(77)
			if err != nil {
				t.Fatal(err)
			}
			if !got.Equal(tc.want) {
				t.Fatalf("start time %s, want %s", got.UTC(), tc.want.UTC())
			}
		})
	}
}

// TestProcErrors: every failure names the process, the file and, where
// there is one, what to do; none is mistaken for a start time of zero.
func TestProcErrors(t *testing.T) {
	for name, tc := range map[string]struct {
		files map[string]string
		root  string // instead of a tree of files
		want  []string
	}{
		"the process is gone": {
			files: map[string]string{"stat": bootLine},
			want:  []string{"process 77: not in ", "it has exited, or runs in a pid namespace the agent does not see"},
		},
		"no procfs at the root": {
			root: filepath.Join(t.TempDir(), "missing"),
			want: []string{"process 77: procfs at ", "cannot be read; the agent needs the host's /proc there"},
		},
		"no btime line": {
			files: map[string]string{"stat": "cpu  1 2 3\nprocesses 9\n", "77/stat": procStat(77, 5), "77/cgroup": podCgroupV2},
			want:  []string{"process 77: ", "stat has no btime line, so its start time is unknown; is ", " the host's procfs?"},
		},
		"a btime that is not a number": {
			files: map[string]string{"stat": "btime soon\n", "77/stat": procStat(77, 5), "77/cgroup": podCgroupV2},
			want:  []string{"process 77: reading the boot time from ", "stat"},
		},
		"a stat cut short": {
			files: map[string]string{"stat": bootLine, "77/stat": "77 (csi) S 1 77 77 0\n", "77/cgroup": podCgroupV2},
			want:  []string{"process 77: reading its parent and start time from ", filepath.Join("77", "stat")},
		},
		"a stat without a command name": {
			files: map[string]string{"stat": bootLine, "77/stat": "77 csi S 1 77 77 0\n", "77/cgroup": podCgroupV2},
			want:  []string{"process 77: reading its parent and start time from "},
		},
		"a start time that is not a number": {
			files: map[string]string{"stat": bootLine, "77/stat": strings.Replace(procStat(77, 5), " 5 1000 ", " x 1000 ", 1), "77/cgroup": podCgroupV2},
			want:  []string{"process 77: reading its parent and start time from "},
		},
		"no cgroup file": {
			files: map[string]string{"stat": bootLine, "77/stat": procStat(77, 5)},
			want:  []string{"process 77: reading its cgroups from ", filepath.Join("77", "cgroup")},
		},
		"a cgroup line the kernel would not write": {
			files: map[string]string{"stat": bootLine, "77/stat": procStat(77, 5), "77/cgroup": "x::/kubepods.slice\n"},
			want:  []string{"process 77: reading its cgroups from "},
		},
	} {
		t.Run(name, func(t *testing.T) {
			root := tc.root
			if root == "" {
				root = fakeProcfs(t, tc.files)
			}
			c := &Caller{PID: 77}
			err := (&Proc{Root: root}).Describe(c)
			if err == nil {
				t.Fatalf("Describe succeeded: %+v", c)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q\nlacks %q", err, w)
				}
			}
			if c.PodMapped || c.ContainerID != "" {
				t.Errorf("a failed Describe filled in %+v", c)
			}
		})
	}
}

// TestProcDescribeCgroups reads the container from cgroup v1 (one line per
// hierarchy, the pod in some of them) and finds none for a host process.
func TestProcDescribeCgroups(t *testing.T) {
	v1 := "12:pids:/system.slice/containerd.service\n" +
		"11:cpu,cpuacct:/kubepods/besteffort/pod" + podUID + "/" + cid + "\n" +
		"1:name=systemd:/kubepods/besteffort/pod" + podUID + "/" + cid + "\n" +
		"0::/\n"
	root := fakeProcfs(t, map[string]string{
		"stat":    bootLine,
		"77/stat": procStat(77, 100), "77/cgroup": v1,
		"78/stat": procStat(78, 100), "78/cgroup": "0::/system.slice/kubelet.service\n",
	})
	c := &Caller{PID: 77}
	if err := (&Proc{Root: root}).Describe(c); err != nil {
		t.Fatal(err)
	}
	if c.ContainerID != cid || c.PodUID != podUID || c.Runtime != "" || !c.PodMapped || c.ProcessStart != "2025-03-01T08:00:01.00Z" {
		t.Fatalf("described %+v", c)
	}
	host := &Caller{PID: 78}
	if err := (&Proc{Root: root}).Describe(host); err != nil {
		t.Fatal(err)
	}
	if !host.PodMapped || host.ContainerID != "" || host.PodUID != "" {
		t.Fatalf("a host process described as %+v", host)
	}
}

// TestProcDescribeOutsideNamespace: a process whose cgroup lies outside
// the agent's cgroup namespace is neither on the host nor in a pod, even
// when a pod's name follows the "..", and its record says why.
func TestProcDescribeOutsideNamespace(t *testing.T) {
	root := fakeProcfs(t, map[string]string{
		"stat":    bootLine,
		"79/stat": procStat(79, 100), "79/cgroup": "0::/../../kubepods-burstable-pod" + podSys + ".slice/cri-containerd-" + cid + ".scope\n",
	})
	// Fields of an earlier look at the pid do not survive this one.
	c := &Caller{PID: 79, PodMapped: true, PodUID: podUID, ContainerID: cid}
	if err := (&Proc{Root: root}).Describe(c); err != nil {
		t.Fatal(err)
	}
	if c.Attribution() != Unattributed || c.PodMapped || c.PodUID != "" || c.ContainerID != "" || c.ProcessStart == "" {
		t.Fatalf("described %+v as %s", c, c.Attribution())
	}
	want := `cgroup path "/../../kubepods-burstable-pod` + podSys + `.slice/cri-containerd-` + cid + `.scope" climbs out of the agent's cgroup namespace, so the caller is unattributed: neither a pod's nor the host's`
	if c.Unattributed != want || len(c.Notes) != 1 || c.Notes[0] != want {
		t.Fatalf("Unattributed %q, notes %q; want both %q", c.Unattributed, c.Notes, want)
	}
}

// TestCallerAttribution: only a platform that maps processes to pods, and
// placed this one, makes a caller without a pod the host.
func TestCallerAttribution(t *testing.T) {
	for name, tc := range map[string]struct {
		c    Caller
		want string
	}{
		"pod":                            {Caller{PodMapped: true, PodUID: podUID}, AttributedPod},
		"pod from a token, unmapped":     {Caller{PodUID: podUID}, AttributedPod},
		"host":                           {Caller{PodMapped: true}, AttributedHost},
		"platform that maps no pods":     {Caller{}, Unattributed},
		"cgroup outside the namespace":   {Caller{Unattributed: "x"}, Unattributed},
		"mapped yet unplaced (CRI miss)": {Caller{PodMapped: true, Unattributed: "x"}, Unattributed},
	} {
		if got := tc.c.Attribution(); got != tc.want {
			t.Errorf("%s: Attribution() = %q; want %q", name, got, tc.want)
		}
	}
}

// TestProcBootTimeReadOnce: the boot time of a procfs mount is read once,
// so start times computed at different moments stay comparable even if
// /proc/stat's btime moves (the kernel moves it when the clock is stepped).
func TestProcBootTimeReadOnce(t *testing.T) {
	root := fakeProcfs(t, map[string]string{"stat": bootLine, "77/stat": procStat(77, 100)})
	p := &Proc{Root: root}
	first, err := p.StartTime(77)
	if err != nil {
		t.Fatal(err)
	}
	stepped := strings.Replace(bootLine, "btime 1740816000", "btime 1740816003", 1)
	if err := os.WriteFile(filepath.Join(root, "stat"), []byte(stepped), 0o644); err != nil {
		t.Fatal(err)
	}
	again, err := p.StartTime(77)
	if err != nil {
		t.Fatal(err)
	}
	if !again.Equal(first) {
		t.Fatalf("start time %v, then %v after btime moved: the boot time was read again", first, again)
	}
}
