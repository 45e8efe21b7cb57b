//go:build !windows

package audit

import (
	"fmt"
	"os"
	"path/filepath"
)

// syncDir fsyncs the directory of the log, so that a rename, a new file or
// a removal survives a power loss: without it the file's data is on disk
// but its name may not be.
func syncDir(path string) error {
	d, err := os.Open(filepath.Dir(path))
	if err != nil {
		return fmt.Errorf("opening the audit log directory to sync it: %w", err)
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("syncing the audit log directory %s: %w", filepath.Dir(path), err)
	}
	return nil
}
