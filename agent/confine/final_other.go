//go:build !linux && !windows

package confine

import (
	"os"
	"path/filepath"
)

// openFinal resolves p through its links with filepath.EvalSymlinks.
func openFinal(p string) (string, error) { return filepath.EvalSymlinks(p) }

// dirFinal reports nothing here: the place of a directory is taken from
// the name it was opened by.
func dirFinal(*os.File) (string, bool) { return "", false }
