//go:build !windows

package filesystem

import "github.com/pipeguard/pipeguard/agent/confine"

// symlink creates the link tgt pointing at text, through the root handle.
func symlink(text string, tgt *confine.Handle) error {
	return tgt.Root().Symlink(text, tgt.Name())
}
