package pipepath

import (
	"math/rand"
	"strings"
	"testing"
	"unicode"
)

// Reading modes of lexicalReader: how a layer in front of Windows might
// treat `.` and `..` before the path reaches the object manager.
const (
	readClimbing = iota // `..` may climb past a device, server or share
	readSticky          // `..` stops at the device name or at server\share
	readLiteral         // `.` and `..` are names (what \\?\ and \??\ do)
)

// lexicalReader is a deliberately simple, independent reading of a path:
// clean it lexically, then follow the well-known links to the pipe
// namespace. It returns the pipe name it reaches.
func lexicalReader(raw string, mode int) (string, bool) {
	s := strings.ReplaceAll(strings.ToLower(strings.TrimSpace(raw)), "/", `\`)
	var prefix string
	switch {
	case strings.HasPrefix(s, `\\.\`), strings.HasPrefix(s, `\\?\`), strings.HasPrefix(s, `\??\`):
		prefix, s = s[:4], s[4:]
	case strings.HasPrefix(s, `\\`) && !strings.HasPrefix(s, `\\\`):
		prefix, s = `\\`, s[2:]
	case strings.HasPrefix(s, `\`) && !strings.HasPrefix(s, `\\`):
		prefix, s = `\`, s[1:]
	default:
		return "", false
	}
	root := 1
	if prefix == `\\` {
		root = 2
	}
	var segs []string
	for _, seg := range strings.Split(s, `\`) {
		switch {
		case seg == "", seg == "." && mode != readLiteral:
			continue
		case seg == ".." && mode != readLiteral:
			if len(segs) > 0 && (mode == readClimbing || len(segs) > root) {
				segs = segs[:len(segs)-1]
			}
			continue
		}
		if seg = strings.TrimRight(seg, ". "); seg != "" {
			segs = append(segs, seg)
		}
	}
	dir := "dos"
	switch prefix {
	case `\\`:
		dir = "mup"
	case `\`:
		dir = "root"
	}
	for i, seg := range segs {
		switch {
		case dir == "dos" && seg == "pipe", dir == "device" && seg == "namedpipe":
			return strings.Join(segs[i+1:], `\`), true
		case dir == "mup":
			if i+1 < len(segs) && segs[i+1] == "pipe" {
				return strings.Join(segs[i+2:], `\`), true
			}
			return "", false
		case dir == "dos" && seg == "global":
		case dir == "dos" && seg == "globalroot":
			dir = "root"
		case dir == "dos" && seg == "unc", dir == "device" && seg == "mup":
			dir = "mup"
		case dir == "root" && (seg == "??" || seg == "global??" || seg == "dosdevices"):
			dir = "dos"
		case dir == "root" && seg == "device":
			dir = "device"
		default:
			return "", false
		}
	}
	return "", false
}

// Whatever a simple lexical reader takes for a pipe, Classify must not call
// an ordinary path; and when Classify resolves a pipe, its name must be the
// one the reader found (modulo the dot segments \\?\ leaves alone).
func TestClassifyAgreesWithLexicalReader(t *testing.T) {
	tokens := []string{`\\.\`, `\\?\`, `\??\`, `\\`, `\`, `/`, `//`, "pipe", "PIPE", "namedpipe", "device",
		"globalroot", "global", "global??", "dosdevices", "??", "unc", "mup", "localhost", "127.0.0.1", "ipc$",
		"c:", "csi", "x", ".", "..", "...", " ", ". ", "pipe.", "namedpipe.", "PIPE ", " pipe", ";x", "csi:",
		"ſ", "pıpe", "\x00", "%5c", "%2e", "＼", "\u200b"}
	separators := []string{`\`, `\`, `\`, `/`, `\\`}
	rng := rand.New(rand.NewSource(1))
	for n := 0; n < 100000; n++ {
		var b strings.Builder
		for i := range 1 + rng.Intn(7) {
			if i > 0 && rng.Intn(3) > 0 {
				b.WriteString(separators[rng.Intn(len(separators))])
			}
			b.WriteString(tokens[rng.Intn(len(tokens))])
		}
		in := b.String()
		if rng.Intn(2) == 0 {
			in = mapRunes(in, func(r rune) rune {
				if rng.Intn(2) == 0 {
					return unicode.ToUpper(r)
				}
				return r
			})
		}
		r := Classify(in)
		for mode := range 3 {
			name, ok := lexicalReader(in, mode)
			if !ok || name == "" {
				continue
			}
			if r.Class == NotPipe || (mode != readLiteral && r.Class == Pipe && r.Pipe != CanonicalPipeName(name)) {
				t.Errorf("Classify(%q) = %q %q, but a lexical reader (mode %d) reaches pipe %q", in, r.Class, r.Pipe, mode, name)
			}
		}
	}
}
