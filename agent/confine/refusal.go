package confine

import (
	"errors"
	"fmt"
	"strconv"
	"unicode"
)

// Rule names one confinement rule. It appears in every refusal so that an
// operator can tell which rule refused a request.
type Rule string

// The confinement rules, in the order they are checked.
const (
	RuleEmpty           Rule = "empty"
	RuleLength          Rule = "length"
	RuleCharacters      Rule = "characters"
	RuleAlternatePrefix Rule = "alternate-prefix"
	RuleNotAbsolute     Rule = "not-absolute"
	RuleTraversal       Rule = "traversal"
	RuleDeviceName      Rule = "device-name"
	RuleOutsideRoots    Rule = "outside-roots"
	RuleSymlinkEscape   Rule = "symlink-escape"
	// RuleRootTarget refuses an allowed root itself as what a creating or
	// destroying operation acts on; reads may name a root.
	RuleRootTarget Rule = "root-target"
	// RuleMountPoint refuses a recursive removal that would cross a mount
	// point inside the roots: what is mounted there (a bind mount of a
	// directory elsewhere, another file system) is not the roots' to empty.
	RuleMountPoint Rule = "mount-point"
	// RulePodLink refuses a link placed in, or leading into, a pod's
	// directory that the caller has no business with (see RefusePodLinkAt).
	RulePodLink Rule = "pod-link"
)

// Malformed reports whether the rule refuses a path for its shape alone, so
// that no configuration of roots could make it acceptable. The others
// (outside-roots, symlink-escape, root-target, mount-point, pod-link)
// refuse well-formed paths for where they lie or what they lead to.
func (r Rule) Malformed() bool {
	switch r {
	case RuleOutsideRoots, RuleSymlinkEscape, RuleRootTarget, RuleMountPoint, RulePodLink:
		return false
	}
	return true
}

// Refusal is the error returned when a path breaks a confinement rule.
type Refusal struct {
	// Rule is the rule that refused the path.
	Rule Rule
	// Field is the request field that carried the path, e.g. "source_path".
	Field string
	// Path is the path as the caller sent it.
	Path string
	// Reason completes the sentence `path "<Path>" ...`.
	Reason string
}

func (r *Refusal) Error() string {
	field := ""
	if r.Field != "" {
		field = r.Field + ": "
	}
	return fmt.Sprintf("%spath %s %s (confinement rule %s)", field, Quote(r.Path), r.Reason, r.Rule)
}

// Quote wraps s in double quotes, escaping it only when it holds characters
// that would garble a log line, so that Windows paths stay readable:
// "C:\var\lib\kubelet" rather than "C:\\var\\lib\\kubelet".
func Quote(s string) string {
	for _, r := range s {
		if !unicode.IsPrint(r) || r == '"' {
			return strconv.Quote(s)
		}
	}
	return `"` + s + `"`
}

// Named gives a *Refusal in err that names no request field the field
// name; other errors are returned as they are.
func Named(field string, err error) error {
	var r *Refusal
	if errors.As(err, &r) && r.Field == "" {
		c := *r
		c.Field = field
		return &c
	}
	return err
}
