package confine

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
	"syscall"
)

// Flavour selects the path syntax: the agent confines Windows paths on
// Windows and Linux paths on Linux, and tests run both on Linux.
type Flavour int

const (
	// Linux paths: '/' separated, case-sensitive.
	Linux Flavour = iota
	// Windows paths: drive-letter, '\' separated, case-insensitive.
	Windows
)

func (f Flavour) String() string {
	if f == Windows {
		return "windows"
	}
	return "linux"
}

// Mode says how much of a path is resolved through symlinks before the
// resolved path is checked against the roots.
type Mode int

const (
	// ResolveParent resolves every component but the last, for operations
	// that act on the name itself (Lstat, removing or creating a link).
	ResolveParent Mode = iota
	// ResolveAll resolves the last component too, for operations that act
	// on what the name points to (creating directories inside it, removing
	// its contents, making a link point to it).
	ResolveAll
)

// Resolver resolves symlinks. OSResolver, on the host filesystem, is the real
// one.
type Resolver interface {
	// EvalSymlinks resolves every symlink in an existing path.
	EvalSymlinks(path string) (string, error)
	// Readlink returns the target of a symlink.
	Readlink(path string) (string, error)
}

// OSResolver resolves symlinks on the host filesystem.
type OSResolver struct{}

// EvalSymlinks calls filepath.EvalSymlinks.
func (OSResolver) EvalSymlinks(p string) (string, error) { return filepath.EvalSymlinks(p) }

// Readlink calls os.Readlink.
func (OSResolver) Readlink(p string) (string, error) { return os.Readlink(p) }

// maxLinkHops bounds the dangling links followed while resolving one path.
const maxLinkHops = 40

// Options configures a Confiner.
type Options struct {
	// Flavour is the path syntax.
	Flavour Flavour
	// Roots are the directories paths must stay in: the kubelet path first,
	// then the working dirs. At least one is required. Rule pod-link reads
	// the pod directories below the first.
	Roots []string
	// MaxLength is the longest path accepted, in bytes; 0 means
	// MaxPathWindows or MaxPathLinux by Flavour.
	MaxLength int
	// Resolver, when set, makes the Confiner resolve symlinks and refuse
	// paths that leave the roots through one. Nil means lexical checks only.
	Resolver Resolver
}

// Confiner checks paths against the confinement rules. It is safe for
// concurrent use.
type Confiner struct {
	flavour  Flavour
	roots    []string
	resolved []string
	maxLen   int
	resolver Resolver
}

// New validates the roots with the same rules as request paths and returns a
// Confiner.
func New(o Options) (*Confiner, error) {
	c := &Confiner{flavour: o.Flavour, maxLen: o.MaxLength, resolver: o.Resolver}
	if c.maxLen <= 0 {
		c.maxLen = MaxPathLinux
		if o.Flavour == Windows {
			c.maxLen = MaxPathWindows
		}
	}
	if len(o.Roots) == 0 {
		return nil, errors.New("confinement needs at least one root: set the kubelet path or a working dir")
	}
	for _, r := range o.Roots {
		clean, rule, reason := c.lex(r)
		if rule != "" {
			return nil, fmt.Errorf("allowed root: %w", &Refusal{Rule: rule, Path: r, Reason: reason})
		}
		c.roots = append(c.roots, clean)
		res := clean
		if c.resolver != nil {
			if rr, err := c.resolver.EvalSymlinks(clean); err == nil {
				res = rr
			}
		}
		c.resolved = append(c.resolved, res)
	}
	return c, nil
}

// Roots returns the cleaned roots.
func (c *Confiner) Roots() []string { return append([]string(nil), c.roots...) }

// Flavour returns the path syntax the Confiner checks.
func (c *Confiner) Flavour() Flavour { return c.flavour }

// Check returns the cleaned path when p, sent in the request field named
// field, is acceptable, and a *Refusal naming the broken rule when it is not.
// Callers must use the returned path, which is the one that was checked.
func (c *Confiner) Check(field, p string, mode Mode) (string, error) {
	clean, err := c.CheckLexical(field, p)
	if err != nil {
		return "", err
	}
	if c.resolver == nil || c.isRoot(clean) {
		// A root itself is trusted as configured, even when it is a link
		// (say /var/lib/kubelet -> /data/kubelet).
		return clean, nil
	}
	resolved, err := c.resolve(clean, mode)
	if err != nil {
		return "", &Refusal{Rule: RuleSymlinkEscape, Field: field, Path: p, Reason: fmt.Sprintf(
			"could not be resolved through symlinks to prove it stays inside the allowed roots: %v", err)}
	}
	if !c.inside(resolved, c.resolved) {
		return "", &Refusal{Rule: RuleSymlinkEscape, Field: field, Path: p, Reason: fmt.Sprintf(
			"resolves through a symlink to %s, outside the allowed roots [%s]", Quote(resolved), strings.Join(c.resolved, " "))}
	}
	return clean, nil
}

// CheckLexical applies the rules that need no file system access (every
// rule but symlink-escape) and returns the cleaned path or a *Refusal. It
// lets a request be refused before anything else looks at it; the full
// Check must still run before the path is used.
func (c *Confiner) CheckLexical(field, p string) (string, error) {
	clean, rule, reason := c.lex(p)
	if rule != "" {
		return "", &Refusal{Rule: rule, Field: field, Path: p, Reason: reason}
	}
	if !c.inside(clean, c.roots) {
		return "", &Refusal{Rule: RuleOutsideRoots, Field: field, Path: p, Reason: fmt.Sprintf(
			"is outside the allowed roots [%s]: it must be a root or lie below one after a separator (the kubelet path and the working dirs)",
			strings.Join(c.roots, " "))}
	}
	return clean, nil
}

func (c *Confiner) lex(p string) (string, Rule, string) {
	if c.flavour == Windows {
		return lexWindows(p, c.maxLen)
	}
	return lexLinux(p, c.maxLen)
}

func (c *Confiner) isRoot(p string) bool {
	for _, r := range c.roots {
		if c.flavour == Windows && asciiFoldEqual(strings.TrimSuffix(p, `\`), strings.TrimSuffix(r, `\`)) || c.flavour == Linux && p == r {
			return true
		}
	}
	return false
}

func (c *Confiner) inside(p string, roots []string) bool {
	for _, r := range roots {
		if c.flavour == Windows && withinWindows(p, r) || c.flavour == Linux && withinLinux(p, r) {
			return true
		}
	}
	return false
}

// resolve resolves the longest existing prefix of p through symlinks and
// appends the rest, which does not exist yet and so cannot be a link.
func (c *Confiner) resolve(p string, mode Mode) (string, error) {
	dir, base := c.split(p)
	if mode == ResolveParent && base != "" {
		d, err := c.resolveExisting(dir)
		if err != nil {
			return "", err
		}
		return c.join(d, base), nil
	}
	return c.resolveExisting(p)
}

func (c *Confiner) resolveExisting(p string) (string, error) {
	var rest []string
	for hops := 0; ; {
		r, err := c.resolver.EvalSymlinks(p)
		if err == nil {
			for i := len(rest) - 1; i >= 0; i-- {
				r = c.join(r, rest[i])
			}
			return r, nil
		}
		if !errors.Is(err, fs.ErrNotExist) && !errors.Is(err, syscall.ENOTDIR) {
			return "", err
		}
		dir, base := c.split(p)
		if target, lerr := c.resolver.Readlink(p); lerr == nil {
			// p is a link whose target does not exist (yet): what gets
			// created through it lands at the target, so check that.
			if hops++; hops > maxLinkHops {
				return "", fmt.Errorf("more than %d symlinks", maxLinkHops)
			}
			if !c.isAbs(target) {
				target = c.join(dir, target)
			}
			p = c.clean(target)
			continue
		}
		if base == "" {
			return "", err
		}
		rest = append(rest, base)
		p = dir
	}
}

func (c *Confiner) isAbs(p string) bool {
	if c.flavour == Windows {
		return len(p) >= 3 && p[1] == ':' && p[2] == '\\'
	}
	return strings.HasPrefix(p, "/")
}

func (c *Confiner) clean(p string) string {
	if c.flavour == Windows {
		return filepath.Clean(p)
	}
	return path.Clean(p)
}

func (c *Confiner) split(p string) (dir, base string) {
	sep := "/"
	if c.flavour == Windows {
		sep = `\`
	}
	i := strings.LastIndex(p, sep)
	if i < 0 || i == len(p)-1 {
		return p, ""
	}
	dir = p[:i]
	if dir == "" || (c.flavour == Windows && len(dir) == 2) {
		dir += sep
	}
	return dir, p[i+1:]
}

func (c *Confiner) join(dir, base string) string {
	if c.flavour == Windows {
		return strings.TrimSuffix(dir, `\`) + `\` + base
	}
	return path.Join(dir, base)
}
