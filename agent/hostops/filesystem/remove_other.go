//go:build !linux

package filesystem

import "github.com/pipeguard/pipeguard/agent/confine"

// removeAll removes the name of h with everything below it through the
// root handle. On Windows os.Root opens every name with reparse points left
// unfollowed, so a volume mount point or junction in the tree is removed as
// an entry of its own and the volume or directory it leads to is not
// entered.
func removeAll(h *confine.Handle, _ string) error {
	return h.Err(h.Root().RemoveAll(h.Name()))
}

// removeContents removes the entries of the directory named by h, not the
// directory itself. The directory is opened once, as a root of its own,
// and its entries are removed through that handle; os.Root refuses to open
// it when it is a mount point or junction.
func removeContents(h *confine.Handle, _ string) error {
	dir, err := h.Root().OpenRoot(h.Name())
	if err != nil {
		return h.Err(err)
	}
	defer dir.Close()
	f, err := dir.Open(".")
	if err != nil {
		return h.Err(err)
	}
	names, err := f.Readdirnames(-1)
	_ = f.Close()
	if err != nil {
		return h.Err(err)
	}
	for _, n := range names {
		if err := dir.RemoveAll(n); err != nil {
			return h.Err(err)
		}
	}
	return nil
}
