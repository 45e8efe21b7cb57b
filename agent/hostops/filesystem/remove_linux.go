package filesystem

import (
	"errors"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/pipeguard/pipeguard/agent/confine"
)

// On Linux a recursive removal walks the tree itself instead of calling
// os.Root.RemoveAll, which follows mount points: emptying a directory that
// holds a bind mount of a directory elsewhere would empty that directory.
// The walk never crosses a mount point. The directory holding the path is
// opened through the root handle and must lie on the allowed root's mount;
// below it, each directory is opened by a handle on its parent (openat,
// O_NOFOLLOW) and the mount the opened handle lies on is compared with the
// root's, so whatever is mounted at a name, before the walk or while it
// runs, is met on the handle the walk would go on with, before anything is
// removed through it. A mount made over a directory after its handle was
// opened does not change what the handle refers to: the walk goes on in the
// directory it checked, under the mount. Unlinking a name that is a mount
// point fails (EBUSY) and touches nothing mounted there.
//
// The walk runs twice: a first pass only looks, so that a tree holding a
// mount point is refused with nothing removed; the second removes, with the
// same checks, and stops at a mount point that appeared meanwhile.

// removeAll removes the name of h with everything below it, as Rmdir with
// force: a link is removed, not followed; a missing name is no error.
func removeAll(h *confine.Handle, op string) error {
	t, err := openTop(h, op)
	if err != nil || t == nil {
		return err
	}
	defer t.dir.Close()
	if !t.st.isDir() {
		return h.Err(pathErr("unlinkat", h.Abs(), unix.Unlinkat(t.pfd, t.base, 0)))
	}
	if err := removeBelow(h, op, t.pfd, t.base, t.root); err != nil {
		return err
	}
	return h.Err(pathErr("unlinkat", h.Abs(), unix.Unlinkat(t.pfd, t.base, unix.AT_REMOVEDIR)))
}

// removeContents removes everything inside the directory named by h, not
// the directory itself.
func removeContents(h *confine.Handle, op string) error {
	t, err := openTop(h, op)
	if err == nil && t == nil {
		err = h.Err(pathErr("statx", h.Abs(), unix.ENOENT))
	}
	if err != nil {
		return err
	}
	defer t.dir.Close()
	return removeBelow(h, op, t.pfd, t.base, t.root)
}

// top is the name a removal starts from: base in the directory dir (pfd),
// with its stat, and the stat of the allowed root the removal stays on.
type top struct {
	dir  *os.File
	pfd  int
	base string
	st   stat
	root stat
}

// openTop opens the directory holding the name of h and checks that it
// lies on the mount of the allowed root and that the name is no mount
// point. A missing name returns nil and no error.
func openTop(h *confine.Handle, op string) (*top, error) {
	r, err := h.Root().Open(".")
	if err != nil {
		return nil, h.Err(err)
	}
	rs, err := statFd(int(r.Fd()))
	_ = r.Close()
	if err != nil {
		return nil, h.Err(pathErr("statx", h.RootPath(), err))
	}
	dir, base, _, err := h.Parent()
	if err != nil {
		return nil, err
	}
	t := &top{dir: dir, pfd: int(dir.Fd()), base: base, root: rs}
	if err := t.check(h, op); err != nil || t.st.mode == 0 {
		_ = dir.Close()
		return nil, err
	}
	return t, nil
}

// check fills in the stat of the name, zero when it is missing, and
// refuses a directory holding it that lies on another mount than the
// root (the allowed root itself may be a mount's root), or a name that is
// a mount point.
func (t *top) check(h *confine.Handle, op string) error {
	ps, err := statFd(t.pfd)
	if err != nil {
		return h.Err(pathErr("statx", filepath.Dir(h.Abs()), err))
	}
	if filepath.Dir(h.Name()) != "." && ps.crosses(t.root) {
		return h.RefuseMount(op, confine.MountAbove, mountAbove(h, t.root))
	}
	t.st, err = statAt(t.pfd, t.base)
	if errors.Is(err, unix.ENOENT) {
		t.st = stat{}
		return nil
	}
	if err != nil {
		return h.Err(pathErr("statx", h.Abs(), err))
	}
	if t.st.isDir() && t.st.crosses(t.root) {
		return h.RefuseMount(op, confine.MountAt, "")
	}
	return nil
}

// mountAbove names the mount point on the way from the root to the name
// of h: the first directory, opened through the root, that crosses from
// the root's mount rs; the name's directory when none does any more.
func mountAbove(h *confine.Handle, rs stat) string {
	parent := filepath.Dir(h.Name())
	prefix := ""
	for _, n := range strings.Split(parent, string(filepath.Separator)) {
		prefix = filepath.Join(prefix, n)
		d, err := h.Root().Open(prefix)
		if err != nil {
			break
		}
		s, err := statFd(int(d.Fd()))
		_ = d.Close()
		if err == nil && s.crosses(rs) {
			return filepath.Join(h.RootPath(), prefix)
		}
	}
	return filepath.Join(h.RootPath(), parent)
}

// removeBelow empties the directory base of the directory pfd, which lies
// on mount m: first a look at the whole tree, then the removal.
func removeBelow(h *confine.Handle, op string, pfd int, base string, m stat) error {
	for _, remove := range []bool{false, true} {
		if remove && testHookBeforeRemove != nil {
			testHookBeforeRemove()
		}
		w := walk{h: h, op: op, remove: remove}
		if err := w.child(pfd, base, "", m); err != nil {
			return err
		}
	}
	return nil
}

// testHookBeforeRemove, when set, runs between the look and the removal.
var testHookBeforeRemove func()

// walk is one pass over a tree.
type walk struct {
	h      *confine.Handle
	op     string
	remove bool
}

// child opens the directory name of the directory pfd, at rel below the
// walked path, checks that the opened handle lies on mount m, and walks its
// entries.
func (w *walk) child(pfd int, name, rel string, m stat) error {
	fd, err := unix.Openat(pfd, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return w.h.Err(pathErr("openat", w.abs(rel), err))
	}
	d := os.NewFile(uintptr(fd), w.abs(rel))
	defer d.Close()
	// The check that holds: on the handle everything below is reached by.
	dm, err := statFd(fd)
	if err != nil {
		return w.h.Err(pathErr("statx", w.abs(rel), err))
	}
	if dm.crosses(m) {
		return w.refuse(rel)
	}
	names, err := d.Readdirnames(-1)
	if err != nil {
		return w.h.Err(pathErr("readdirent", w.abs(rel), err))
	}
	for _, n := range names {
		if err := w.entry(fd, n, filepath.Join(rel, n), m); err != nil {
			return err
		}
	}
	return nil
}

// entry walks, and in the removing pass removes, the entry name of the
// directory fd.
func (w *walk) entry(fd int, name, rel string, m stat) error {
	st, err := statAt(fd, name)
	if errors.Is(err, unix.ENOENT) {
		return nil
	}
	if err != nil {
		return w.h.Err(pathErr("statx", w.abs(rel), err))
	}
	if st.crosses(m) {
		return w.refuse(rel)
	}
	if st.isDir() {
		if err := w.child(fd, name, rel, m); err != nil {
			return err
		}
	}
	if !w.remove {
		return nil
	}
	flags := 0
	if st.isDir() {
		flags = unix.AT_REMOVEDIR
	}
	if err := unix.Unlinkat(fd, name, flags); err != nil && !errors.Is(err, unix.ENOENT) {
		return w.h.Err(pathErr("unlinkat", w.abs(rel), err))
	}
	return nil
}

// refuse refuses the removal for the mount point at rel below the walked
// path, named as the caller named the path.
func (w *walk) refuse(rel string) error {
	met := confine.MountBelow
	switch {
	case rel == "":
		// The path itself, mounted over since it was checked.
		met = confine.MountAt
	case w.remove:
		met = confine.MountAppeared
	}
	return w.h.RefuseMount(w.op, met, filepath.Join(w.h.Path(), rel))
}

// abs is the host path of rel below the walked path, for errors.
func (w *walk) abs(rel string) string { return filepath.Join(w.h.Abs(), rel) }

// stat is what the walk needs to know of a file: the mount it lies on,
// whether it is that mount's root, and its type.
type stat struct {
	mnt       uint64
	mountRoot bool
	mode      uint16
}

// crosses reports whether the file lies on another mount than its parent
// directory, or is the root of a mount: a bind mount of a directory of the
// same file system has a mount id of its own, and on kernels without mount
// ids shows only as a mount's root.
func (s stat) crosses(parent stat) bool { return s.mountRoot || s.mnt != parent.mnt }

func (s stat) isDir() bool { return s.mode&unix.S_IFMT == unix.S_IFDIR }

// statMask asks statx for the type and the mount id.
const statMask = unix.STATX_TYPE | unix.STATX_MNT_ID

// statFd returns the stat of the open file fd.
func statFd(fd int) (stat, error) {
	return statx(fd, "", unix.AT_EMPTY_PATH)
}

// statAt returns the stat of the entry name of the directory fd, without
// following a link; a mount point is crossed, so the mounted root is
// reported.
func statAt(fd int, name string) (stat, error) {
	return statx(fd, name, unix.AT_SYMLINK_NOFOLLOW|unix.AT_NO_AUTOMOUNT)
}

func statx(fd int, name string, flags int) (stat, error) {
	var st unix.Statx_t
	if err := unix.Statx(fd, name, flags, statMask, &st); err != nil {
		return stat{}, err
	}
	s := stat{mode: st.Mode}
	// Without mount ids (kernels before 5.8) the device tells file
	// systems apart, and the mount-root attribute, where the kernel has
	// it, bind mounts of the same file system.
	s.mnt = uint64(st.Dev_major)<<32 | uint64(st.Dev_minor)
	if st.Mask&unix.STATX_MNT_ID != 0 {
		s.mnt = st.Mnt_id
	}
	s.mountRoot = st.Attributes_mask&unix.STATX_ATTR_MOUNT_ROOT != 0 && st.Attributes&unix.STATX_ATTR_MOUNT_ROOT != 0
	return s, nil
}
