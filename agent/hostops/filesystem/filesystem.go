package filesystem

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// API is the filesystem host operations.
type API interface {
	// PathExists reports whether path exists, without following a final symlink.
	PathExists(ctx context.Context, path string) (bool, error)
	// Mkdir creates path and its missing parents.
	Mkdir(ctx context.Context, path string) error
	// Rmdir removes the directory or link at path; with force, with its contents.
	Rmdir(ctx context.Context, path string, force bool) error
	// RmdirContents removes everything inside the directory at path.
	RmdirContents(ctx context.Context, path string) error
	// CreateSymlink creates target as a symlink pointing to source.
	CreateSymlink(ctx context.Context, source, target string) error
	// IsSymlink reports whether path is a symlink (or, on Windows, a mount
	// point) whose target exists. It fails when path itself does not exist.
	IsSymlink(ctx context.Context, path string) (bool, error)
}

// Local is API on the host filesystem, with CSI Proxy's semantics.
type Local struct{}

var _ API = Local{}

// PathExists uses Lstat, as CSI Proxy does.
func (Local) PathExists(_ context.Context, path string) (bool, error) {
	return exists(path)
}

func exists(path string) (bool, error) {
	_, err := os.Lstat(path)
	if err == nil {
		return true, nil
	}
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	return false, err
}

// Mkdir creates directories with mode 0755, like CSI Proxy.
func (Local) Mkdir(_ context.Context, path string) error {
	return os.MkdirAll(path, 0o755)
}

// Rmdir removes path; force removes it with its contents.
func (Local) Rmdir(_ context.Context, path string, force bool) error {
	if force {
		return os.RemoveAll(path)
	}
	return os.Remove(path)
}

// RmdirContents removes the entries of the directory at path, not path itself.
func (Local) RmdirContents(_ context.Context, path string) error {
	entries, err := os.ReadDir(path)
	if err != nil {
		return err
	}
	for _, e := range entries {
		if err := os.RemoveAll(filepath.Join(path, e.Name())); err != nil {
			return err
		}
	}
	return nil
}

// CreateSymlink creates target pointing at source.
func (Local) CreateSymlink(_ context.Context, source, target string) error {
	return os.Symlink(source, target)
}

// IsSymlink follows CSI Proxy: true only when path is a link (a symlink, or a
// mount point, which Go reports as irregular on Windows) and its target exists.
func (Local) IsSymlink(_ context.Context, path string) (bool, error) {
	fi, err := os.Lstat(path)
	if err != nil {
		return false, err
	}
	if fi.Mode()&(fs.ModeSymlink|fs.ModeIrregular) == 0 {
		return false, nil
	}
	target, err := os.Readlink(path)
	if err != nil {
		return false, fmt.Errorf("readlink error: %w", err)
	}
	if !filepath.IsAbs(target) {
		target = filepath.Join(filepath.Dir(path), target)
	}
	return exists(target)
}
