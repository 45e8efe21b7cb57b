package confine

import (
	"errors"
	"fmt"
	"io/fs"
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

// Place returns the host path Name leads to by its final path, every link
// on the way followed: the allowed root as configured joined with where the
// opened file lies inside the root, as the platform reports it (see
// dirFinal). Abs is where the root's view of Name says it lies; Place is
// where the host put it, which differs when a link the root did not see
// (a host directory link under Wine) or a component swapped after Open is
// on the way. A name that does not exist yet takes the place of its
// deepest existing directory, with the rest appended.
func (h *Handle) Place() (string, error) {
	name, rest := h.name, ""
	for {
		f, err := h.root.Open(name)
		if err == nil {
			at, err := h.placeOf(f, name)
			_ = f.Close()
			if err != nil {
				return "", err
			}
			if rest != "" {
				at = filepath.Join(at, rest)
			}
			return at, nil
		}
		if name == "." || !errors.Is(err, fs.ErrNotExist) {
			// A link leading out of the root is refused, not taken for
			// a name that does not exist.
			return "", h.Err(err)
		}
		rest = filepath.Join(filepath.Base(name), rest)
		name = filepath.Dir(name)
	}
}
