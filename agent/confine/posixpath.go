package confine

import (
	"fmt"
	"path"
	"strings"
)

// MaxPathLinux is PATH_MAX on Linux.
const MaxPathLinux = 4096

// lexLinux checks the shape of a Linux path and returns it cleaned.
func lexLinux(p string, maxLen int) (string, Rule, string) {
	if p == "" {
		return "", RuleEmpty, "is empty: give an absolute path such as /var/lib/kubelet/..."
	}
	if len(p) > maxLen {
		return "", RuleLength, lengthReason(len(p), maxLen)
	}
	if hasControl(p) {
		return "", RuleCharacters, "contains a control character"
	}
	if !strings.HasPrefix(p, "/") {
		return "", RuleNotAbsolute, "is not absolute: give a path such as /var/lib/kubelet/..."
	}
	for seg := range strings.SplitSeq(p, "/") {
		if seg == "." || seg == ".." {
			return "", RuleTraversal, "contains a " + Quote(seg) + ` segment: give the path without "." and ".."`
		}
	}
	return path.Clean(p), "", ""
}

func withinLinux(p, root string) bool {
	if !strings.HasPrefix(p, root) {
		return false
	}
	return len(p) == len(root) || root == "/" || p[len(root)] == '/'
}

func lengthReason(n, limit int) string {
	return fmt.Sprintf("is %d bytes long, over the limit of %d", n, limit)
}

func hasControl(s string) bool {
	for _, r := range s {
		if r < 0x20 || r == 0x7f {
			return true
		}
	}
	return false
}
