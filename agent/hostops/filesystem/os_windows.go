package filesystem

import "os"

// symlinkAt creates the link at, pointing at text, by path: Windows decides
// whether the link is a directory link by following text, which may be a
// volume mount point the root handle does not follow, and os.Root cannot
// be told. at is the place of the directory dir, opened through the root
// handle just before, as its final path reports it.
func symlinkAt(text string, _ *os.File, _, at string) error {
	return os.Symlink(text, at)
}
