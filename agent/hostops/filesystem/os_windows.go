package filesystem

import (
	"os"

	"github.com/pipeguard/pipeguard/agent/confine"
)

// symlink creates the link tgt pointing at text, by path: Windows decides
// whether the link is a directory link by following text, which may be a
// volume mount point the root handle does not follow, and os.Root cannot
// be told. The parent of tgt was resolved inside its root just before.
func symlink(text string, tgt *confine.Handle) error {
	return os.Symlink(text, tgt.Abs())
}
