package sysinfo

import (
	"os"
	"testing"
)

func TestFilesystemOf(t *testing.T) {
	const mounts = `/dev/vda / ext4 rw,relatime 0 0
proc /proc proc rw 0 0
tmpfs /tmp tmpfs rw 0 0
/dev/vdb /tmp/disk xfs rw 0 0
tmpfs /run tmpfs rw 0 0
overlay /run overlay rw 0 0
/dev/vdc /mnt/my\040disk btrfs rw 0 0
`
	for path, want := range map[string]string{
		"/":                 "ext4",
		"/home/u/x":         "ext4",
		"/tmp":              "tmpfs",
		"/tmp/a/b":          "tmpfs",
		"/tmp/disk/audit":   "xfs",
		"/tmpfoo":           "ext4",
		"/run/x":            "overlay",
		"/mnt/my disk/logs": "btrfs",
	} {
		if got := filesystemOf(path, mounts); got != want {
			t.Errorf("%s: %q, want %q", path, got, want)
		}
	}
}

func TestThisProcess(t *testing.T) {
	if _, err := os.Stat("/proc/self/stat"); err != nil {
		t.Skip("no /proc")
	}
	rss, hwm := Memory(Self)
	if rss <= 0 || hwm < rss {
		t.Errorf("RSS %d, peak %d", rss, hwm)
	}
	if CPUTime(Self) < 0 {
		t.Error("negative CPU time")
	}
	m := Describe()
	if m.Cores < 1 || m.GOMAXPROCS < 1 || m.GoVersion == "" || m.Date == "" {
		t.Errorf("incomplete: %+v", m)
	}
}
