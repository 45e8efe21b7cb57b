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
	if v.class == Pipe {
		prefix, segs = PipePrefix, segs[v.name:]
	}
	n := len(prefix) + len(segs)
	for _, s := range segs {
		n += s.hi - s.lo
	}
	var out strings.Builder
	out.Grow(n)
	out.WriteString(prefix)
	for i, s := range segs {
		if i > 0 {
			out.WriteByte('\\')
		}
		out.Write(p.text(s))
	}
	r := Result{Class: v.class, Normalized: out.String(), Reason: v.reason}
	if v.class == Pipe {
		r.Pipe = r.Normalized[len(PipePrefix):]
	}
	return r
}

func eq(b []byte, s string) bool { return string(b) == s }

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
