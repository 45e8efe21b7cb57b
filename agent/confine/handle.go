package confine

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
)

// Handle is a path opened for use on the host: a handle (os.Root) on the
// allowed root that contains the path, and the path's name inside that root
// with its symlinks resolved within the root.
//
// Every operation on the name goes through the root handle, which never
// leaves the root: a component swapped for a symlink after the name was
// resolved is followed only while it stays inside the root, and the
// operation fails with a symlink-escape refusal otherwise. Absolute links
// whose target lies inside the root are translated to names inside it;
// links leaving the root are refused.
type Handle struct {
	c        *Confiner
	root     *os.Root
	rootPath string
	rootReal string
	path     string
	name     string
}

// Open confines p lexically, opens the allowed root that contains it (the
// outermost, when roots are nested) and resolves p's symlinks inside that
// root: every component but the last for ResolveParent, all of them for
// ResolveAll. Refusals are *Refusal without a Field; the caller sets it.
// Open needs the host's path flavour. The caller closes the Handle.
func (c *Confiner) Open(p string, mode Mode) (*Handle, error) {
	clean, err := c.CheckLexical("", p)
	if err != nil {
		return nil, err
	}
	if (c.flavour == Windows) != (runtime.GOOS == "windows") {
		return nil, fmt.Errorf("%s paths cannot be opened on %s", c.flavour, runtime.GOOS)
	}
	i := -1
	for j, r := range c.roots {
		if c.inside(clean, []string{r}) && (i < 0 || len(r) < len(c.roots[i])) {
			i = j
		}
	}
	r, err := os.OpenRoot(c.roots[i])
	if err != nil {
		return nil, fmt.Errorf("allowed root %s: %w", Quote(c.roots[i]), err)
	}
	h := &Handle{c: c, root: r, rootPath: c.roots[i], rootReal: c.resolved[i], path: clean}
	h.name, err = h.resolve(c.below(clean, c.roots[i]), mode == ResolveAll)
	if err == nil {
		err = h.checkFinal()
	}
	if err != nil {
		_ = r.Close()
		return nil, err
	}
	return h, nil
}

// Root is the handle on the allowed root.
func (h *Handle) Root() *os.Root { return h.root }

// Name is the path's name inside Root, "." for the root itself.
func (h *Handle) Name() string { return h.name }

// Abs is the resolved path: the allowed root as configured joined with
// Name.
func (h *Handle) Abs() string {
	if h.name == "." {
		return h.rootPath
	}
	return filepath.Join(h.rootPath, h.name)
}

// Close releases the root handle.
func (h *Handle) Close() error { return h.root.Close() }

// Follow resolves Name's last component too and returns the name inside
// Root it leads to.
func (h *Handle) Follow() (string, error) { return h.resolve(h.name, true) }

// RefuseRoot returns a root-target refusal when the resolved path is an
// allowed root: op (a method name) may act only on paths inside one.
func (h *Handle) RefuseRoot(op string) error {
	if h.name != "." && !h.c.isRoot(h.Abs()) {
		return nil
	}
	return &Refusal{Rule: RuleRootTarget, Path: h.path, Reason: fmt.Sprintf(
		"resolves to the allowed root %s; %s may act only on paths inside it", Quote(h.Abs()), op)}
}

// Err turns an error of an operation on Root into the error for the path:
// a name that escaped the root (a component swapped for a link leading
// out) becomes a symlink-escape refusal; a *fs.PathError names the host
// path instead of the name inside the root.
func (h *Handle) Err(err error) error {
	if err == nil {
		return nil
	}
	if IsEscape(err) {
		return &Refusal{Rule: RuleSymlinkEscape, Path: h.path, Reason: fmt.Sprintf(
			"resolves through a symlink outside the allowed root %s: a link on the way leaves it, or is absolute and changed while in use", Quote(h.rootPath))}
	}
	var pe *fs.PathError
	if errors.As(err, &pe) && !filepath.IsAbs(pe.Path) {
		p := h.rootPath
		if pe.Path != "." && pe.Path != "" {
			p = filepath.Join(h.rootPath, pe.Path)
		}
		return &fs.PathError{Op: pe.Op, Path: p, Err: pe.Err}
	}
	return err
}

// IsEscape reports whether err is os.Root's refusal of a name that leads
// outside the root (an absolute link, or ".." above the root).
func IsEscape(err error) bool {
	for e := err; e != nil; e = errors.Unwrap(e) {
		if e.Error() == "path escapes from parent" {
			return true
		}
	}
	return false
}

// RefuseRoot returns a root-target refusal when p, sent in field, is an
// allowed root itself: op (a method name) creates or destroys, and may act
// only on paths inside a root.
func (c *Confiner) RefuseRoot(field, p, op string) error {
	clean, err := c.CheckLexical(field, p)
	if err != nil {
		return err
	}
	if !c.isRoot(clean) {
		return nil
	}
	return &Refusal{Rule: RuleRootTarget, Field: field, Path: p, Reason: fmt.Sprintf(
		"is an allowed root itself; %s may act only on paths inside it", op)}
}

// below returns the name of p inside root, "." for root itself.
func (c *Confiner) below(p, root string) string {
	sep := "/"
	if c.flavour == Windows {
		sep = `\`
	}
	rest := strings.TrimLeft(p[len(root):], sep)
	if rest == "" {
		return "."
	}
	return rest
}

// resolve walks name through the root one component at a time with Lstat
// and Readlink, both through the root handle, and returns the name with
// its symlinks replaced by their targets. Components that do not exist are
// kept as they are: nothing below them can be a link yet.
func (h *Handle) resolve(name string, followLast bool) (string, error) {
	parts := splitName(name)
	var done []string
	missing := false
	for hops := 0; len(parts) > 0; {
		part := parts[0]
		parts = parts[1:]
		if part == ".." {
			if len(done) == 0 {
				return "", h.escape(filepath.Join(append([]string{h.rootPath, ".."}, parts...)...))
			}
			done = done[:len(done)-1]
			continue
		}
		cur := filepath.Join(append(done, part)...)
		if missing || (len(parts) == 0 && !followLast) {
			done = append(done, part)
			continue
		}
		fi, err := h.root.Lstat(cur)
		if errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR) {
			missing = true
			done = append(done, part)
			continue
		}
		if err != nil {
			return "", h.Err(err)
		}
		if fi.Mode()&(fs.ModeSymlink|fs.ModeIrregular) == 0 {
			done = append(done, part)
			continue
		}
		target, err := h.root.Readlink(cur)
		if err != nil {
			if fi.Mode()&fs.ModeSymlink == 0 {
				// Irregular, but not a link: a file like any other.
				done = append(done, part)
				continue
			}
			return "", h.Err(err)
		}
		if hops++; hops > maxLinkHops {
			return "", &Refusal{Rule: RuleSymlinkEscape, Path: h.path, Reason: fmt.Sprintf(
				"could not be resolved through symlinks to prove it stays inside the allowed roots: more than %d symlinks", maxLinkHops)}
		}
		target = h.c.nativeTarget(target)
		if len(parts) == 0 && h.c.foreign(target) {
			// A volume mount point or SMB mapping the node keeps in the
			// root: the name itself is what the path leads to.
			done = append(done, part)
			continue
		}
		if filepath.IsAbs(target) || filepath.VolumeName(target) != "" {
			rel, ok := h.within(target)
			if !ok {
				return "", h.escape(filepath.Join(append([]string{target}, parts...)...))
			}
			done = nil
			parts = append(splitName(rel), parts...)
			continue
		}
		parts = append(splitName(target), parts...)
	}
	if len(done) == 0 {
		return ".", nil
	}
	return filepath.Join(done...), nil
}

// within returns the name inside the handle's root of the absolute link
// target t, when t lies inside the root as configured or as resolved.
func (h *Handle) within(t string) (string, bool) {
	t = filepath.Clean(t)
	for _, r := range []string{h.rootPath, h.rootReal} {
		if h.c.inside(t, []string{r}) {
			return h.c.below(t, r), true
		}
	}
	return "", false
}

func (h *Handle) escape(to string) error {
	return &Refusal{Rule: RuleSymlinkEscape, Path: h.path, Reason: fmt.Sprintf(
		"resolves through a symlink to %s, outside the allowed root %s that contains it", Quote(to), Quote(h.rootPath))}
}

// nativeTarget drops the \\?\ and \??\ prefixes Windows may report on a
// link to a drive-letter path, so that the target compares with the roots.
func (c *Confiner) nativeTarget(t string) string {
	if c.flavour != Windows {
		return t
	}
	for _, pre := range []string{`\\?\`, `\??\`} {
		if rest := t[min(len(pre), len(t)):]; hasPrefixFold(t, pre) && len(rest) >= 3 && isASCIILetter(rest[0]) && rest[1] == ':' && rest[2] == '\\' {
			return rest
		}
	}
	return t
}

// foreign reports whether a link target is one the node keeps in the
// roots on purpose although it leads out of them: on Windows, a volume
// mount point (\\?\Volume{GUID}\) or an SMB mapping (\\server\share),
// both created through this agent. Nothing is followed through one; only
// the link itself is accepted as the end of a path.
func (c *Confiner) foreign(t string) bool {
	if c.flavour != Windows {
		return false
	}
	switch {
	case hasPrefixFold(t, `\\?\Volume{`), hasPrefixFold(t, `\??\Volume{`), hasPrefixFold(t, `\\?\UNC\`):
		return true
	case hasPrefixFold(t, `\\?\`), hasPrefixFold(t, `\\.\`), hasPrefixFold(t, `\??\`):
		return false
	}
	return strings.HasPrefix(t, `\\`)
}

// splitName splits a name inside a root into its components, without
// empty and "." ones.
func splitName(name string) []string {
	var parts []string
	for _, p := range strings.FieldsFunc(name, func(r rune) bool { return r == '/' || r < 0x80 && os.IsPathSeparator(uint8(r)) }) {
		if p != "." {
			parts = append(parts, p)
		}
	}
	return parts
}
