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

// Final confines p, sent in the request field named field, for a path that
// is handed to a host command: it applies the lexical rules (CheckLexical),
// then opens the path on the host (its parent directory for ResolveParent,
// so that a last component which is a link or does not exist yet is not
// followed) and checks the final path of the opened handle against the
// roots: on Linux the link of the descriptor under /proc/self/fd, on
// Windows GetFinalPathNameByHandle.
// Components that do not exist yet are appended to the final path of the
// longest existing prefix; a dangling link on the way is followed to where
// a name created through it would land.
//
// Final returns that resolved path, which is the one to hand to the command:
// it goes through no link that existed when it was checked. A path whose
// final path leaves the roots is refused with a *Refusal of rule
// symlink-escape; one refused by a lexical rule keeps that rule.
//
// A Confiner of the other flavour than the host's (the Windows groups
// assembled on Linux in tests) has no host file to open: Final applies Check
// alone and returns its cleaned path.
func (c *Confiner) Final(field, p string, mode Mode) (string, error) {
	if !finalOnHost(c.flavour) {
		return c.Check(field, p, mode)
	}
	// The lexical rules only: the path is resolved on the host below, which
	// supersedes the Resolver's resolution of Check.
	clean, err := c.CheckLexical(field, p)
	if err != nil {
		return "", err
	}
	resolved, err := finalOf(clean, mode)
	if err != nil {
		return "", &Refusal{Rule: RuleSymlinkEscape, Field: field, Path: p, Reason: fmt.Sprintf(
			"could not be opened to prove that it stays inside the allowed roots: %v", err)}
	}
	roots := c.finalRoots()
	if c.inside(resolved, roots) {
		return resolved, nil
	}
	return "", &Refusal{Rule: RuleSymlinkEscape, Field: field, Path: p, Reason: fmt.Sprintf(
		"resolves through a link to %s, outside the allowed roots [%s]", Quote(resolved), strings.Join(roots, " "))}
}

// finalOnHost reports whether paths of flavour f can be opened on this host.
func finalOnHost(f Flavour) bool {
	return (f == Windows) == (runtime.GOOS == "windows")
}

// finalRoots returns the roots as configured followed by their final paths:
// a root is trusted as configured even when it is a link (a kubelet dir
// that links to another disk), so what lies below its target is inside.
func (c *Confiner) finalRoots() []string {
	roots := c.Roots()
	out := append([]string(nil), roots...)
	for _, r := range roots {
		if f, err := finalExisting(r); err == nil && f != r {
			out = append(out, f)
		}
	}
	return out
}

// finalOf resolves p on the host: all of it for ResolveAll, its parent for
// ResolveParent.
func finalOf(p string, mode Mode) (string, error) {
	if mode == ResolveParent {
		if dir, base := finalSplit(p); base != "" {
			d, err := finalExisting(dir)
			if err != nil {
				return "", err
			}
			return filepath.Join(d, base), nil
		}
	}
	return finalExisting(p)
}

// finalExisting opens the longest existing prefix of p, following links,
// and returns its final path with the rest of p appended.
func finalExisting(p string) (string, error) {
	var rest []string
	for hops := 0; ; {
		r, err := openFinal(p)
		if err == nil {
			for i := len(rest) - 1; i >= 0; i-- {
				r = filepath.Join(r, rest[i])
			}
			return r, nil
		}
		if !errors.Is(err, fs.ErrNotExist) && !errors.Is(err, syscall.ENOTDIR) {
			return "", err
		}
		dir, base := finalSplit(p)
		if target, lerr := os.Readlink(p); lerr == nil {
			// p is a link whose target does not exist (yet): what is
			// created through it lands at the target.
			if hops++; hops > maxLinkHops {
				return "", fmt.Errorf("more than %d links", maxLinkHops)
			}
			if p, err = finalLinkTarget(dir, target); err != nil {
				return "", err
			}
			continue
		}
		if base == "" {
			return "", err
		}
		rest = append(rest, base)
		p = dir
	}
}

// finalLinkTarget returns the path a link in dir with the given target
// names.
func finalLinkTarget(dir, target string) (string, error) {
	switch {
	case filepath.IsAbs(target):
		return filepath.Clean(target), nil
	case filepath.VolumeName(target) != "":
		return "", fmt.Errorf("link target %s is relative to a drive's current directory", Quote(target))
	case target != "" && os.IsPathSeparator(target[0]):
		// Rooted on the link's drive (\dir on Windows).
		return filepath.Clean(filepath.VolumeName(dir) + target), nil
	}
	return filepath.Join(dir, target), nil
}

// finalSplit splits p into its parent and last name; base is empty for a
// file system root.
func finalSplit(p string) (dir, base string) {
	dir = filepath.Dir(p)
	if dir == p {
		return p, ""
	}
	return dir, filepath.Base(p)
}
