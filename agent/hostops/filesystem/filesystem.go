package filesystem

import (
	"context"
	"errors"
	"fmt"
	"io/fs"

	"github.com/pipeguard/pipeguard/agent/confine"
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

// Rooted is implemented by host operations that work through handles on
// the allowed roots: WithRoots returns them bound to the roots of c.
type Rooted interface {
	WithRoots(c *confine.Confiner) API
}

// Local is API on the host filesystem, with CSI Proxy's semantics. Every
// operation goes through a handle on the allowed root of Roots that holds
// the path (confine.Handle), never through the path itself, so a link
// swapped in while the call runs cannot lead it out of the root. A Local
// without Roots refuses every call.
type Local struct {
	Roots *confine.Confiner
}

var (
	_ API    = Local{}
	_ Rooted = Local{}
)

// WithRoots returns Local bound to the roots of c.
func (Local) WithRoots(c *confine.Confiner) API { return Local{Roots: c} }

func (l Local) open(p string, mode confine.Mode) (*confine.Handle, error) {
	if l.Roots == nil {
		return nil, errors.New("internal error: the host filesystem operations have no allowed roots; the request was not run")
	}
	return l.Roots.Open(p, mode)
}

// PathExists uses Lstat, as CSI Proxy does.
func (l Local) PathExists(_ context.Context, path string) (bool, error) {
	h, err := l.open(path, confine.ResolveParent)
	if err != nil {
		return false, err
	}
	defer h.Close()
	return exists(h, h.Name())
}

func exists(h *confine.Handle, name string) (bool, error) {
	_, err := h.Root().Lstat(name)
	if err == nil {
		return true, nil
	}
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	return false, h.Err(err)
}

// Mkdir creates directories with mode 0755, like CSI Proxy.
func (l Local) Mkdir(_ context.Context, path string) error {
	h, err := l.open(path, confine.ResolveAll)
	if err != nil {
		return err
	}
	defer h.Close()
	if err := h.RefuseRoot("Mkdir"); err != nil {
		return err
	}
	return h.Err(h.Root().MkdirAll(h.Name(), 0o755))
}

// Rmdir removes path; force removes it with its contents. A final link is
// removed, not followed. With force, the removal does not cross a mount
// point (rule mount-point), and a path that does not exist, or whose
// parent does not, is removed already: the call succeeds, as CSI Proxy's
// os.RemoveAll does (drivers remove their paths without asking first).
func (l Local) Rmdir(_ context.Context, path string, force bool) error {
	h, err := l.open(path, confine.ResolveParent)
	if force && errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	defer h.Close()
	if err := h.RefuseRoot("Rmdir"); err != nil {
		return err
	}
	if force {
		if err := removeAll(h, "Rmdir"); !errors.Is(err, fs.ErrNotExist) {
			return err
		}
		return nil
	}
	return h.Err(h.Root().Remove(h.Name()))
}

// RmdirContents removes the entries of the directory at path, not path
// itself, through handles, and does not cross a mount point (rule
// mount-point).
func (l Local) RmdirContents(_ context.Context, path string) error {
	h, err := l.open(path, confine.ResolveAll)
	if err != nil {
		return err
	}
	defer h.Close()
	if err := h.RefuseRoot("RmdirContents"); err != nil {
		return err
	}
	return removeContents(h, "RmdirContents")
}

// CreateSymlink creates target pointing at source. The source is resolved
// inside its root first, and the link points at the resolved path. The
// link is created through a handle on its directory, and rule pod-link is
// applied to where that handle lies, for the caller in ctx
// (confine.WithCaller).
func (l Local) CreateSymlink(ctx context.Context, source, target string) error {
	src, err := l.open(source, confine.ResolveAll)
	if err != nil {
		return confine.Named("source_path", err)
	}
	defer src.Close()
	if err := src.RefuseRoot("CreateSymlink"); err != nil {
		return confine.Named("source_path", err)
	}
	tgt, err := l.open(target, confine.ResolveParent)
	if err != nil {
		return confine.Named("target_path", err)
	}
	defer tgt.Close()
	if err := tgt.RefuseRoot("CreateSymlink"); err != nil {
		return confine.Named("target_path", err)
	}
	dir, base, at, err := tgt.Parent()
	if err != nil {
		return confine.Named("target_path", err)
	}
	defer dir.Close()
	if err := l.Roots.RefusePodLinkAt(confine.CallerFrom(ctx), target, at); err != nil {
		return confine.Named("target_path", err)
	}
	if err := l.Roots.RefusePodLinkFrom(source, src, at); err != nil {
		return confine.Named("source_path", err)
	}
	return confine.Named("target_path", tgt.Err(symlinkAt(src.Abs(), dir, base, at)))
}

// IsSymlink follows CSI Proxy: true only when path is a link (a symlink, or a
// mount point, which Go reports as irregular on Windows) and its target
// exists. The target is looked up inside the root; a link leading out of
// it is refused, not answered, except links the node itself keeps in the
// roots on purpose (on Windows: volume mount points and SMB mappings),
// which are answered for the link itself.
func (l Local) IsSymlink(_ context.Context, path string) (bool, error) {
	h, err := l.open(path, confine.ResolveParent)
	if err != nil {
		return false, err
	}
	defer h.Close()
	fi, err := h.Root().Lstat(h.Name())
	if err != nil {
		return false, h.Err(err)
	}
	if fi.Mode()&(fs.ModeSymlink|fs.ModeIrregular) == 0 {
		return false, nil
	}
	if _, err := h.Root().Readlink(h.Name()); err != nil {
		return false, fmt.Errorf("readlink error: %w", h.Err(err))
	}
	name, err := h.Follow()
	if err != nil {
		return false, err
	}
	return exists(h, name)
}

// pathErr names the host path p in a failed system call; nil stays nil.
func pathErr(op, p string, err error) error {
	if err == nil {
		return nil
	}
	return &fs.PathError{Op: op, Path: p, Err: err}
}
