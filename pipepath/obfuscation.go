package pipepath

import (
	"strings"
	"unicode/utf8"
)

// feature is something in a path that Windows, or a layer in front of it,
// may read differently from the plain text: a NUL ends a C string, a
// decoder turns %5c into a separator, a best-fit code page conversion turns
// a full-width solidus into one. Ordered from least to most telling.
type feature uint8

const (
	featNone feature = iota
	featLookalike
	featEncoded
	featInvisible
	featUTF8
	featControl
	featNUL
)

var featureReasons = [...]string{
	featLookalike: reasonLookalike,
	featEncoded:   reasonEncoded,
	featInvisible: reasonInvisible,
	featUTF8:      reasonUTF8,
	featControl:   reasonControl,
	featNUL:       reasonNUL,
}

// skeletonPasses bounds the rounds of decoding (%255c needs two), so a
// long chain of %25 costs linear time.
const skeletonPasses = 4

// scanFeatures returns the most telling feature of s.
func scanFeatures(s string) feature {
	f := featNone
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			switch {
			case c == 0:
				return featNUL
			case c < 0x20 || c == 0x7f:
				f = max(f, featControl)
			case c == '%' && encodedLen(s[i:]) > 0:
				f = max(f, featEncoded)
			}
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		i += size
		switch {
		case r == utf8.RuneError: // a byte that is not UTF-8, or U+FFFD left by a lossy decoder
			f = max(f, featUTF8)
		case isControl(r):
			f = max(f, featControl)
		case isInvisible(r):
			f = max(f, featInvisible)
		default:
			if _, ok := lookalike(r); ok {
				f = max(f, featLookalike)
			}
		}
	}
	return f
}

// classifyObfuscated judges a path that has feature f. The path is
// Ambiguous when any reading of it reaches for a pipe: as written, with the
// suspicious characters decoded or removed, or cut at its first NUL.
func classifyObfuscated(s string, f feature) Result {
	r := classifyPath(s)
	bad := r.Class != NotPipe || classifyPath(skeleton(s)).Class != NotPipe
	if !bad && f == featNUL {
		bad = classifyPath(skeleton(s[:strings.IndexByte(s, 0)])).Class != NotPipe
	}
	if !bad {
		return r
	}
	return Result{Class: Ambiguous, Normalized: r.Normalized, Reason: featureReasons[f]}
}

// skeleton is s as the most permissive decoder would see it: percent and
// overlong UTF-8 encodings decoded, look-alikes mapped to ASCII, control
// and invisible characters and stray bytes removed.
func skeleton(s string) string {
	for range skeletonPasses {
		t := skeletonPass(s)
		if t == s {
			break
		}
		s = t
	}
	return s
}

func skeletonPass(s string) string {
	out := make([]byte, 0, len(s))
	for i := 0; i < len(s); {
		c := s[i]
		if c == '%' {
			switch n := encodedLen(s[i:]); n {
			case 3:
				out = append(out, unhex(s[i+1])<<4|unhex(s[i+2]))
				i += n
				continue
			case 6:
				r := rune(unhex(s[i+2]))<<12 | rune(unhex(s[i+3]))<<8 | rune(unhex(s[i+4]))<<4 | rune(unhex(s[i+5]))
				out = utf8.AppendRune(out, r)
				i += n
				continue
			}
		}
		if c < utf8.RuneSelf {
			if c >= 0x20 && c != 0x7f {
				out = append(out, c)
			}
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			if v, n := overlong(s[i:]); n > 0 {
				out = append(out, v)
				i += n
			} else {
				i++
			}
			continue
		}
		i += size
		switch {
		case r == utf8.RuneError, isControl(r), isInvisible(r):
		default:
			if a, ok := lookalike(r); ok {
				out = append(out, a)
			} else {
				out = append(out, s[i-size:i]...)
			}
		}
	}
	return string(out)
}

// encodedLen is the length of a percent encoding (%5c, %u005c) at the
// start of s, or 0.
func encodedLen(s string) int {
	switch {
	case len(s) >= 3 && s[0] == '%' && isHex(s[1]) && isHex(s[2]):
		return 3
	case len(s) >= 6 && s[0] == '%' && (s[1] == 'u' || s[1] == 'U') &&
		isHex(s[2]) && isHex(s[3]) && isHex(s[4]) && isHex(s[5]):
		return 6
	}
	return 0
}

func isHex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

func unhex(c byte) byte {
	switch {
	case c <= '9':
		return c - '0'
	case c <= 'F':
		return c - 'A' + 10
	}
	return c - 'a' + 10
}

// overlong decodes an overlong UTF-8 encoding of an ASCII character (C0 AF
// is '/'), which lenient decoders accept, at the start of s.
func overlong(s string) (byte, int) {
	cont := func(i int) bool { return i < len(s) && s[i]&0xc0 == 0x80 }
	switch {
	case (s[0] == 0xc0 || s[0] == 0xc1) && cont(1):
		return (s[0]&0x1f)<<6 | s[1]&0x3f, 2
	case s[0] == 0xe0 && cont(1) && s[1] < 0x82 && cont(2):
		return (s[1]&0x3f)<<6 | s[2]&0x3f, 3
	case s[0] == 0xf0 && cont(1) && s[1] == 0x80 && cont(2) && s[2] < 0x82 && cont(3):
		return (s[2]&0x3f)<<6 | s[3]&0x3f, 4
	}
	return 0, 0
}

// lookalike maps characters that best-fit code page conversions or a
// careless reader turn into ASCII path syntax: the full-width forms of
// ASCII, and stand-ins for separators and dots.
func lookalike(r rune) (byte, bool) {
	if 0xff01 <= r && r <= 0xff5e {
		return byte(r - 0xfee0), true
	}
	switch r {
	case 0x00a5, 0x20a9, 0x2216, 0x29f5, 0x29f9, 0xfe68: // ¥ ₩ ∖ ⧵ ⧹ ﹨: `\` in CJK code pages and by shape
		return '\\', true
	case 0x2044, 0x2215, 0x29f8: // ⁄ ∕ ⧸
		return '/', true
	case 0x2024, 0xfe52, 0xff61: // ․ ﹒ ｡
		return '.', true
	}
	return 0, false
}
