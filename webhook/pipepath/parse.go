package pipepath

import (
	"bytes"
	"strings"
	"unicode"
	"unicode/utf8"
)

// span is one path segment: b[lo:hi] of the folded path, preceded by run
// separators.
type span struct{ lo, hi, run int }

// parsed is a trimmed, folded path split into segments. Its slices point
// into arrays on classifyPath's stack for typical paths, so that a verdict
// costs no allocation beyond the strings it returns.
type parsed struct {
	b      []byte
	smells bool // mentions "pipe" or "ipc$" anywhere
}

func (p *parsed) text(s span) []byte { return p.b[s.lo:s.hi] }

// state is the object-namespace directory a walk is in.
type state uint8

const (
	stDOS    state = iota // \??, \GLOBAL?? (what \\.\ and \\?\ open)
	stRoot                // the root of the object namespace (\\.\GLOBALROOT)
	stDevice              // \Device
	stMup                 // \Device\Mup and \??\UNC: server, share, path
)

// maxHops bounds the namespace segments one walk follows, so a path that
// loops through links such as \??\Global\Global\... costs linear time.
const maxHops = 16

// verdict is the outcome of walking a path through the object namespace.
type verdict struct {
	class  Class
	reason string
	fixed  int  // leading segments that are namespace structure (device, server, share, the pipe root)
	name   int  // Class Pipe: index of the first segment of the pipe name
	open   bool // the path ended where Windows expects a device, server or share name
}

// classifyPath classifies a path that has no encodings, control characters
// or look-alike characters to worry about (or one whose such characters the
// caller already judged).
func classifyPath(raw string) Result {
	s := strings.TrimSpace(raw)
	if s == "" {
		return Result{Class: NotPipe}
	}
	var bufArr [256]byte
	var segArr [32]span
	p := parsed{b: appendFolded(bufArr[:0], s)}
	b := p.b
	p.smells = bytes.Contains(b, []byte("pipe")) || bytes.Contains(b, []byte("ipc$"))

	lead := 0
	for lead < len(b) && b[lead] == '\\' {
		lead++
	}
	segs := segArr[:0]
	maxRun, run := 0, lead
	for i := lead; i < len(b); {
		j := i
		for j < len(b) && b[j] != '\\' {
			j++
		}
		segs = append(segs, span{i, j, run})
		k := j
		for k < len(b) && b[k] == '\\' {
			k++
		}
		run = k - j
		maxRun = max(maxRun, run)
		i = k
	}

	if lead >= 3 {
		return p.leadingRun(s)
	}
	device := lead == 2 && len(segs) > 0 && (eq(p.text(segs[0]), ".") || eq(p.text(segs[0]), "?"))
	segs, dotty := p.strip(segs)
	switch {
	case device:
		prefix := `\\.\`
		if b[2] == '?' {
			prefix = `\\?\`
		}
		return p.namespace(prefix, stDOS, segs[1:], maxRun, dotty)
	case lead == 2:
		return p.namespace(`\\`, stMup, segs, maxRun, dotty)
	case lead == 1 && len(segs) > 0 && isNTRootName(p.text(segs[0])):
		return p.namespace(`\`, stRoot, segs, maxRun, dotty)
	case lead == 1:
		segs = p.clean(`\`, segs)
		if len(segs) > 0 && isNTRootName(p.text(segs[0])) {
			// `\x\..\Device\NamedPipe\y` is a directory on the system
			// drive, unless a layer cleans it into an NT path first.
			if r := p.namespace(`\`, stRoot, segs, maxRun, dotty); r.Class != NotPipe {
				return Result{Class: Ambiguous, Normalized: r.Normalized, Reason: reasonCleansToNT}
			}
		}
		return p.plain(`\`, segs)
	}
	return p.plain("", p.clean("", segs))
}

// namespace judges a path in the device, UNC or NT object namespace: segs
// follow prefix, starting in directory st.
func (p *parsed) namespace(prefix string, st state, segs []span, maxRun int, dotty bool) Result {
	segs, climbed, rootDot := p.resolve(segs, st)
	switch {
	case maxRun >= 3:
		return p.result(prefix, segs, verdict{class: Ambiguous, reason: reasonRun})
	case climbed && p.smells:
		return p.result(prefix, segs, verdict{class: Ambiguous, reason: reasonClimb})
	case rootDot && p.smells:
		return p.result(prefix, segs, verdict{class: Ambiguous, reason: reasonRootDot})
	case dotty && p.smells:
		return p.result(prefix, segs, verdict{class: Ambiguous, reason: reasonDots})
	}
	v := p.walk(segs, st, true)
	if v.class == NotPipe && st == stMup && len(segs) > 0 && isNTRootName(p.text(segs[0])) {
		// Some layer may collapse `\\device\namedpipe\x` to the NT path `\device\namedpipe\x`.
		if p.walk(segs, stRoot, true).class != NotPipe {
			v = verdict{class: Ambiguous, reason: reasonNTCollapse}
		}
	}
	return p.result(prefix, segs, v)
}

// leadingRun judges a path that starts with three or more separators.
// Windows may read it as a UNC path with an empty server or collapse the run;
// when either reading, or the text itself, reaches for a pipe, it is
// Ambiguous.
func (p *parsed) leadingRun(s string) Result {
	rest := strings.TrimLeft(s, `\/`)
	render := `\\\` + strings.TrimLeft(string(p.b), `\`)
	if p.smells || classifyPath(`\\`+rest).Class != NotPipe || classifyPath(`\`+rest).Class != NotPipe {
		return Result{Class: Ambiguous, Normalized: render, Reason: reasonLeadingRun}
	}
	return Result{Class: NotPipe, Normalized: render}
}

// strip removes the trailing dots and spaces Windows drops from a name, in
// place. A segment made only of dots and spaces (other than `.` and `..`)
// is dropped and reported: Windows layers disagree on what it means.
func (p *parsed) strip(segs []span) ([]span, bool) {
	out, dotty := segs[:0], false
	for _, s := range segs {
		t := p.text(s)
		if eq(t, ".") || eq(t, "..") {
			out = append(out, s)
			continue
		}
		s.hi = s.lo + trimmedLen(t)
		if s.hi == s.lo {
			dotty = true
			continue
		}
		out = append(out, s)
	}
	return out, dotty
}

// resolve applies `.` and `..` segments in place. A `..` that would pop a
// namespace segment (a device name, a server or share, the pipe root) is
// kept as a no-op and reported as climbed: Windows layers disagree on
// whether such a `..` stops at that root or climbs past it. A `.` where a
// device, server or share name belongs is dropped and reported as rootDot:
// a layer that does not resolve it reads the names after it differently.
func (p *parsed) resolve(segs []span, st state) (out []span, climbed, rootDot bool) {
	out = segs[:0]
	for _, s := range segs {
		switch t := p.text(s); {
		case eq(t, "."):
			if len(out) == 0 || p.walk(out, st, false).open {
				rootDot = true
			}
		case eq(t, ".."):
			if len(out) == 0 || len(out)-1 < p.walk(out, st, false).fixed {
				climbed = true
			} else {
				out = out[:len(out)-1]
			}
		default:
			out = append(out, s)
		}
	}
	return out, climbed, rootDot
}

// walk follows segs through the Windows object namespace from st. With scan
// it checks everything a final verdict needs; without, it only finds how
// many segments are namespace structure, in time bounded by maxHops.
func (p *parsed) walk(segs []span, st state, scan bool) verdict {
	for i := 0; i < len(segs); i++ {
		if i >= maxHops {
			return verdict{class: Ambiguous, reason: reasonLoop, fixed: len(segs)}
		}
		t := p.text(segs[i])
		switch st {
		case stDOS:
			switch {
			case eq(t, "pipe"):
				return p.pipeName(segs, i+1, scan)
			case eq(t, "global"): // a link back to the global DOS device directory
			case eq(t, "globalroot"):
				st = stRoot
			case eq(t, "unc"):
				st = stMup
			case isVolumeName(t):
				return verdict{class: NotPipe, fixed: i + 1}
			default:
				return p.unresolved(segs, i, scan)
			}
		case stRoot:
			switch {
			case eq(t, "??"), eq(t, "global??"), eq(t, "dosdevices"):
				st = stDOS
			case eq(t, "device"):
				st = stDevice
			case eq(t, "globalroot"): // not a real directory; tolerated as the root itself
			default:
				return p.unresolved(segs, i, scan)
			}
		case stDevice:
			switch {
			case eq(t, "namedpipe"):
				return p.pipeName(segs, i+1, scan)
			case eq(t, "mup"), eq(t, "lanmanredirector"):
				st = stMup
			case bytes.HasPrefix(t, []byte("harddiskvolume")):
				return verdict{class: NotPipe, fixed: i + 1}
			default:
				return p.unresolved(segs, i, scan)
			}
		case stMup:
			if t[0] == ';' { // a redirector prefix such as ;LanmanRedirector, or a server name?
				if i+1 < len(segs) && (eq(p.text(segs[i+1]), "pipe") || eq(p.text(segs[i+1]), "ipc$")) {
					return verdict{class: Ambiguous, reason: reasonRedirector, fixed: i + 2}
				}
				continue
			}
			if i+1 >= len(segs) {
				return verdict{class: Ambiguous, reason: reasonServer, fixed: len(segs), open: true}
			}
			if scan && p.smells && ((i > 0 && segs[i].run >= 2) || segs[i+1].run >= 2) {
				// `\\?\UNC\\pipe\x`: is the server empty, or is it "pipe"?
				return verdict{class: Ambiguous, reason: reasonEmptyName, fixed: i + 2}
			}
			switch share := p.text(segs[i+1]); {
			case eq(share, "pipe"):
				return p.pipeName(segs, i+2, scan)
			case eq(share, "ipc$"):
				return verdict{class: Ambiguous, reason: reasonIPC, fixed: i + 2}
			}
			return verdict{class: NotPipe, fixed: i + 2}
		}
	}
	if st == stMup {
		return verdict{class: Ambiguous, reason: reasonServer, fixed: len(segs), open: true}
	}
	return verdict{class: Ambiguous, reason: reasonAncestor, fixed: len(segs), open: true}
}

// pipeName judges segs[start:], the path below the pipe namespace.
func (p *parsed) pipeName(segs []span, start int, scan bool) verdict {
	if start >= len(segs) {
		return verdict{class: Ambiguous, reason: reasonNamespace, fixed: len(segs)}
	}
	if scan {
		for _, s := range segs[start:] {
			if hasReserved(p.text(s)) {
				return verdict{class: Ambiguous, reason: reasonReserved, fixed: start}
			}
		}
	}
	return verdict{class: Pipe, fixed: start, name: start}
}

// unresolved judges a device or object name that pipeguard does not model.
// It cannot be followed, so it is Ambiguous when the path goes on to
// mention a pipe and NotPipe otherwise.
func (p *parsed) unresolved(segs []span, i int, scan bool) verdict {
	if scan {
		for _, s := range segs[i:] {
			if t := p.text(s); bytes.Contains(t, []byte("pipe")) || bytes.Contains(t, []byte("ipc$")) {
				return verdict{class: Ambiguous, reason: reasonUnknownDev, fixed: i + 1}
			}
		}
	}
	return verdict{class: NotPipe, fixed: i + 1}
}

// plain renders a drive, rooted or relative path. None of them reaches the
// pipe namespace: `C:\pipe\x` and `\pipe\x` are directories named pipe.
func (p *parsed) plain(prefix string, segs []span) Result {
	r := p.result(prefix, segs, verdict{class: NotPipe})
	if prefix == "" && len(segs) == 1 && isDrive(p.text(segs[0])) {
		r.Normalized += `\`
	}
	return r
}

// clean resolves `.` and `..` in a drive, rooted or relative path in place,
// the way Windows does: `..` stops at the drive or the root.
func (p *parsed) clean(prefix string, segs []span) []span {
	root := 0
	if prefix == "" && len(segs) > 0 && isDrive(p.text(segs[0])) {
		root = 1
	}
	out := segs[:0]
	for _, s := range segs {
		switch t := p.text(s); {
		case eq(t, "."):
		case eq(t, ".."):
			switch {
			case len(out) > root && !eq(p.text(out[len(out)-1]), ".."):
				out = out[:len(out)-1]
			case prefix == "" && root == 0: // a relative path keeps its leading `..`
				out = append(out, s)
			}
		default:
			out = append(out, s)
		}
	}
	return out
}

// result renders v for segs.
func (p *parsed) result(prefix string, segs []span, v verdict) Result {
	var arr [256]byte
	out := arr[:0]
	if v.class == Pipe {
		prefix, segs = PipePrefix, segs[v.name:]
	}
	out = append(out, prefix...)
	for i, s := range segs {
		if i > 0 {
			out = append(out, '\\')
		}
		out = append(out, p.text(s)...)
	}
	r := Result{Class: v.class, Normalized: string(out), Reason: v.reason}
	if v.class == Pipe {
		r.Pipe = r.Normalized[len(PipePrefix):]
	}
	return r
}

func eq(b []byte, s string) bool { return string(b) == s }

// hasReserved reports characters Windows forbids in names and reads as
// wildcards or a stream separator: < > : " | ? *.
func hasReserved(t []byte) bool {
	for _, c := range t {
		switch c {
		case '<', '>', ':', '"', '|', '?', '*':
			return true
		}
	}
	return false
}

// trimmedLen is len(t) without trailing dots and white space.
func trimmedLen(t []byte) int {
	n := len(t)
	for n > 0 {
		if c := t[n-1]; c == '.' || c == ' ' {
			n--
			continue
		} else if c < utf8.RuneSelf {
			break
		}
		r, size := utf8.DecodeLastRune(t[:n])
		if !unicode.IsSpace(r) {
			break
		}
		n -= size
	}
	return n
}

// isNTRootName reports the first segment of a rooted path that pipeguard
// reads as an NT object path (`\??\pipe\x`, `\Device\NamedPipe\x`) rather
// than a directory on the system drive.
func isNTRootName(t []byte) bool {
	switch string(t) {
	case "??", "global??", "dosdevices", "device", "globalroot", "sessions", "silos":
		return true
	}
	return false
}

// isDrive reports a drive designator such as `c:`.
func isDrive(t []byte) bool {
	return len(t) == 2 && t[1] == ':' && 'a' <= t[0] && t[0] <= 'z'
}

// isVolumeName reports DOS device names that are file system volumes.
func isVolumeName(t []byte) bool {
	return isDrive(t) || bytes.HasPrefix(t, []byte("volume{")) || bytes.HasPrefix(t, []byte("harddiskvolume"))
}
