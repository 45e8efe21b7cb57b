package confine

import (
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// openFinal opens p with O_PATH, following every link, and returns the
// path of the opened descriptor as the kernel reports it under
// /proc/self/fd. Without /proc it resolves p with filepath.EvalSymlinks.
func openFinal(p string) (string, error) {
	fd, err := unix.Open(p, unix.O_PATH|unix.O_CLOEXEC, 0)
	if err != nil {
		return "", &fs.PathError{Op: "open", Path: p, Err: err}
	}
	defer func() { _ = unix.Close(fd) }()
	if r, err := os.Readlink("/proc/self/fd/" + strconv.Itoa(fd)); err == nil && filepath.IsAbs(r) {
		return r, nil
	}
	return filepath.EvalSymlinks(p)
}

// dirFinal returns the path of the open directory d as the kernel reports
// it under /proc/self/fd; false without /proc, or for a directory that was
// removed.
func dirFinal(d *os.File) (string, bool) {
	r, err := os.Readlink("/proc/self/fd/" + strconv.Itoa(int(d.Fd())))
	if err != nil || !filepath.IsAbs(r) || strings.HasSuffix(r, " (deleted)") {
		return "", false
	}
	return r, true
}
