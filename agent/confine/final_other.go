//go:build !linux && !windows

package confine

import "path/filepath"

// openFinal resolves p through its links with filepath.EvalSymlinks.
func openFinal(p string) (string, error) { return filepath.EvalSymlinks(p) }
