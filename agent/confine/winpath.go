package confine

import (
	"strings"
)

// MaxPathWindows is CSI Proxy's limit on a Windows path (MAX_PATH).
const MaxPathWindows = 260

// windowsForbidden are characters Windows either forbids in names or gives a
// meaning other than a name: '/' is a second separator, ':' selects an
// alternate data stream, the rest are wildcards, quoting and redirection.
const windowsForbidden = `/:*?"<>|`

// reservedDeviceNames are names that Win32 maps to devices in any directory,
// with or without an extension: C:\var\lib\kubelet\NUL.txt is \\.\NUL.
var reservedDeviceNames = map[string]bool{
	"CON": true, "PRN": true, "AUX": true, "NUL": true, "CONIN$": true, "CONOUT$": true,
	"COM0": true, "COM1": true, "COM2": true, "COM3": true, "COM4": true,
	"COM5": true, "COM6": true, "COM7": true, "COM8": true, "COM9": true,
	"COM¹": true, "COM²": true, "COM³": true,
	"LPT0": true, "LPT1": true, "LPT2": true, "LPT3": true, "LPT4": true,
	"LPT5": true, "LPT6": true, "LPT7": true, "LPT8": true, "LPT9": true,
	"LPT¹": true, "LPT²": true, "LPT³": true,
}

// lexWindows checks the shape of a Windows path and returns it cleaned:
// doubled and trailing separators removed. It does not look at roots.
func lexWindows(p string, maxLen int) (string, Rule, string) {
	if p == "" {
		return "", RuleEmpty, `is empty: give an absolute path such as C:\var\lib\kubelet\...`
	}
	if len(p) > maxLen {
		return "", RuleLength, lengthReason(len(p), maxLen)
	}
	if hasControl(p) {
		return "", RuleCharacters, "contains a control character"
	}
	if hasPrefixFold(p, `\\`) || hasPrefixFold(p, `//`) || hasPrefixFold(p, `\/`) || hasPrefixFold(p, `/\`) ||
		hasPrefixFold(p, `\??\`) || hasPrefixFold(p, `/??/`) ||
		hasPrefixFold(p, `\Device\`) || hasPrefixFold(p, `\GLOBAL??\`) {
		return "", RuleAlternatePrefix, `starts with a UNC, device or long-path prefix (\\server\share, \\?\, \\.\, \??\, \Device\), which is not accepted: give a drive-letter path such as C:\var\lib\kubelet\...`
	}
	if len(p) < 3 || !isASCIILetter(p[0]) || p[1] != ':' || p[2] != '\\' {
		return "", RuleNotAbsolute, `is not an absolute drive-letter path: give a path such as C:\var\lib\kubelet\... with backslashes`
	}
	rest := p[3:]
	if i := strings.IndexAny(rest, windowsForbidden); i >= 0 {
		return "", RuleCharacters, "contains " + Quote(rest[i:i+1]) + `, which is not accepted after the drive: use backslash-separated names without :*?"<>|/`
	}
	segs := make([]string, 0, strings.Count(rest, `\`)+1)
	for _, seg := range strings.Split(rest, `\`) {
		switch {
		case seg == "":
			continue
		case seg == "." || seg == "..":
			return "", RuleTraversal, "contains a " + Quote(seg) + ` segment: give the path without "." and ".."`
		case strings.HasSuffix(seg, ".") || strings.HasSuffix(seg, " "):
			return "", RuleCharacters, "has the segment " + Quote(seg) + " ending in a dot or space, which Windows strips, so it would open another name than the one checked"
		case isReservedDeviceName(seg):
			return "", RuleDeviceName, "has the segment " + Quote(seg) + ", a reserved device name that Windows opens as a device, not a file"
		}
		segs = append(segs, seg)
	}
	return p[:3] + strings.Join(segs, `\`), "", ""
}

func isReservedDeviceName(seg string) bool {
	base := seg
	if i := strings.IndexByte(base, '.'); i >= 0 {
		base = base[:i]
	}
	return reservedDeviceNames[strings.ToUpper(strings.TrimRight(base, " "))]
}

// withinWindows reports whether p equals root or lies below it. Only ASCII
// letters compare case-insensitively: NTFS folds case with its own table, and
// two names that Go's Unicode folding calls equal (K and the Kelvin sign) can
// be different directories on disk. Exact bytes are always the same name.
func withinWindows(p, root string) bool {
	if len(p) < len(root) || !asciiFoldEqual(p[:len(root)], root) {
		return false
	}
	return len(p) == len(root) || strings.HasSuffix(root, `\`) || p[len(root)] == '\\'
}

func asciiFoldEqual(a, b string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := 0; i < len(a); i++ {
		if lowerASCII(a[i]) != lowerASCII(b[i]) {
			return false
		}
	}
	return true
}

func lowerASCII(c byte) byte {
	if 'A' <= c && c <= 'Z' {
		return c + 'a' - 'A'
	}
	return c
}

func isASCIILetter(c byte) bool {
	return ('a' <= c && c <= 'z') || ('A' <= c && c <= 'Z')
}

func hasPrefixFold(s, prefix string) bool {
	return len(s) >= len(prefix) && asciiFoldEqual(s[:len(prefix)], prefix)
}
