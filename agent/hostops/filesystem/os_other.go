//go:build !unix && !windows

package filesystem

import "os"

// symlinkAt creates the link at, pointing at text, by path: this platform
// has no call that creates it by the directory's handle.
func symlinkAt(text string, _ *os.File, _, at string) error {
	return os.Symlink(text, at)
}
