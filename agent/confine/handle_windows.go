package confine

import (
	"fmt"
	"os"
	"path/filepath"

	"golang.org/x/sys/windows"
)

// checkFinal opens, through the root handle, the deepest existing directory
// on the way to the resolved name and checks that the final path Windows
// reports for it (GetFinalPathNameByHandle) lies inside the final path of
// the root. os.Root refuses the reparse points it sees leading out; this
// also refuses a redirection it cannot see, such as a host directory link
// under Wine, which shows no reparse point but whose final path is the
// link's target.
func (h *Handle) checkFinal() error {
	root, err := h.root.Open(".")
	if err != nil {
		return h.Err(err)
	}
	rootFinal, err := fileFinal(root)
	_ = root.Close()
	if err != nil {
		return fmt.Errorf("allowed root %s: %w", Quote(h.rootPath), err)
	}
	name := h.name
	for {
		f, err := h.root.Open(name)
		if err == nil {
			final, ferr := fileFinal(f)
			_ = f.Close()
			if ferr != nil {
				return fmt.Errorf("%s: %w", Quote(h.path), ferr)
			}
			if !h.c.inside(final, []string{rootFinal}) {
				return h.escape(final)
			}
			return nil
		}
		if name == "." {
			return h.Err(err)
		}
		// Not there yet, or not openable: check the directory holding it.
		name = filepath.Dir(name)
	}
}

// fileFinal returns the final path of an open file, in Win32 form.
func fileFinal(f *os.File) (string, error) {
	s, err := finalPathByHandle(windows.Handle(f.Fd()), finalVolumeNameDOS)
	if err != nil {
		if s, err = finalPathByHandle(windows.Handle(f.Fd()), finalVolumeNameGUID); err != nil {
			return "", fmt.Errorf("reading the final path: %w", err)
		}
	}
	return finalWin32Path(s), nil
}
