package confine

import (
	"fmt"
	"os"
	"path/filepath"
)

// Path is the path the Handle was opened for, cleaned.
func (h *Handle) Path() string { return h.path }

// RootPath is the allowed root that holds the path, as configured.
func (h *Handle) RootPath() string { return h.rootPath }

// Parent opens, through the root handle, the directory that holds Name,
// for an operation that creates Name in it by that handle, and returns it
// with Name's last component and the host path the new entry gets: the
// allowed root as configured, joined with where the opened directory lies
// inside the root by its final path (see dirFinal), and base. A directory
// on the way that was swapped for a link after Open resolved Name is
// followed only inside the root, and the host path says where the handle
// landed, so a check of that path holds for what the handle creates. The
// caller closes the directory.
func (h *Handle) Parent() (dir *os.File, base, at string, err error) {
	if h.name == "." {
		return nil, "", "", fmt.Errorf("internal error: %s names the allowed root itself, which has no parent inside it", Quote(h.path))
	}
	parent, base := filepath.Dir(h.name), filepath.Base(h.name)
	dir, err = h.root.Open(parent)
	if err != nil {
		return nil, "", "", h.Err(err)
	}
	at, err = h.placeOf(dir, parent)
	if err != nil {
		_ = dir.Close()
		return nil, "", "", err
	}
	return dir, base, filepath.Join(at, base), nil
}

// placeOf returns the host path of the directory d, opened through the
// root as name: the root as configured joined with d's place inside the
// root, by the final paths of d and of the root where the platform reports
// them, else by name.
func (h *Handle) placeOf(d *os.File, name string) (string, error) {
	final, ok := dirFinal(d)
	if !ok {
		return filepath.Join(h.rootPath, name), nil
	}
	r, err := h.root.Open(".")
	if err != nil {
		return "", h.Err(err)
	}
	rootFinal, ok := dirFinal(r)
	_ = r.Close()
	if !ok {
		return filepath.Join(h.rootPath, name), nil
	}
	if !h.c.inside(final, []string{rootFinal}) {
		return "", h.escape(final)
	}
	if rel := h.c.below(final, rootFinal); rel != "." {
		return filepath.Join(h.rootPath, rel), nil
	}
	return h.rootPath, nil
}
