//go:build unix

package filesystem

import (
	"os"

	"golang.org/x/sys/unix"
)

// symlinkAt creates the link base, pointing at text, in the directory dir
// by its handle: the link lands where the checks of its place (at) looked.
func symlinkAt(text string, dir *os.File, base, at string) error {
	return pathErr("symlinkat", at, unix.Symlinkat(text, int(dir.Fd()), base))
}
