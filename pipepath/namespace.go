package pipepath

import "bytes"

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
