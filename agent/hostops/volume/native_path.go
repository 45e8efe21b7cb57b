package volume

import (
	"strings"

	"github.com/pipeguard/pipeguard/agent/hostops/win32"
)

// The native operations handle Windows paths on any OS, so they do not use
// path/filepath. The paths they walk are local and absolute: under a drive
// root (C:\...) or a volume root (\\?\Volume{GUID}\...).

// splitRoot splits an absolute local path into its root, C:\ or
// \\?\Volume{GUID}\ (\\?\C:\ reads as C:\), and the rest, without leading
// or trailing backslashes. ok is false for anything else: a share, a
// device, a relative path.
func splitRoot(p string) (root, rest string, ok bool) {
	p = strings.ReplaceAll(p, "/", `\`)
	if len(p) >= 7 && strings.HasPrefix(p, `\\?\`) && p[5] == ':' && p[6] == '\\' {
		p = p[4:]
	}
	switch {
	case len(p) >= 3 && isLetter(p[0]) && p[1] == ':' && p[2] == '\\':
		root, rest = strings.ToUpper(p[:1])+`:\`, p[3:]
	case strings.HasPrefix(p, `\\?\Volume{`):
		end := strings.IndexByte(p, '}')
		if end < 0 || !win32.IsVolumeName(p[:end+1]) || (len(p) > end+1 && p[end+1] != '\\') {
			return "", "", false
		}
		root, rest = p[:end+1]+`\`, strings.TrimPrefix(p[end+1:], `\`)
	default:
		return "", "", false
	}
	return root, strings.Trim(rest, `\`), true
}

func isLetter(c byte) bool { return c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' }

// parentDir returns the folder holding p; ok is false when p is a root (or
// not a local absolute path).
func parentDir(p string) (string, bool) {
	root, rest, ok := splitRoot(p)
	if !ok || rest == "" {
		return "", false
	}
	i := strings.LastIndexByte(rest, '\\')
	if i < 0 {
		return root, true
	}
	return root + rest[:i], true
}

// isRoot tells whether p is a drive or volume root.
func isRoot(p string) bool {
	_, rest, ok := splitRoot(p)
	return ok && rest == ""
}

// resolveTarget returns where a link at link to target leads: target
// itself when it is a local absolute path, or, for a relative link,
// target taken from link's folder (from link's root when it starts with a
// backslash), with . and .. resolved, never above the root. ok is false
// for a target that is not a local path (a share, a device).
func resolveTarget(link, target string, relative bool) (string, bool) {
	target = strings.ReplaceAll(target, "/", `\`)
	if root, rest, ok := splitRoot(target); ok {
		return join(root, rest), true
	}
	if !relative || strings.HasPrefix(target, `\\`) || (len(target) >= 2 && target[1] == ':') {
		return "", false
	}
	base, ok := parentDir(link)
	if !ok {
		return "", false
	}
	root, rest, _ := splitRoot(base)
	if strings.HasPrefix(target, `\`) {
		rest = ""
	}
	return join(root, rest+`\`+target), true
}

// join returns root followed by the segments of rest, . and .. resolved.
func join(root, rest string) string {
	var segs []string
	for _, s := range strings.Split(rest, `\`) {
		switch s {
		case "", ".":
		case "..":
			if len(segs) > 0 {
				segs = segs[:len(segs)-1]
			}
		default:
			segs = append(segs, s)
		}
	}
	return root + strings.Join(segs, `\`)
}
