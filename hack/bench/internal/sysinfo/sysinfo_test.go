package sysinfo

import "testing"

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
