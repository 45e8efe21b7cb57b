package pipepath

import (
	"unicode"
	"unicode/utf8"

	"github.com/pipeguard/pipeguard/internal/invisible"
)

// foldRune maps r to one representative of its Unicode case-fold orbit.
//
// Windows compares object names case-insensitively by upper-casing both with
// its own table, which follows Unicode's simple uppercase mapping but leaves
// some letters alone: on a node 'ſ' (U+017F), 'ı' (U+0131), 'İ' (U+0130) and
// the Kelvin sign (U+212A) are not 's', 'i', 'i' and 'k', so
// `\.\pipe\cſi-proxy-disk-v1` is a different pipe from csi-proxy-disk-v1.
// foldRune merges more than Windows does: it upper-cases r, then takes the
// smallest member of that form's fold orbit and lower-cases it, and those
// orbits join the look-alikes above to ASCII letters. pipeguard keeps the
// larger merge on purpose. Whatever Windows treats as one name, foldRune
// does too (TestFoldCoversUppercaseComparison), so no spelling of a
// protected pipe escapes; the look-alikes it adds can only make a name match
// a protected one, which fails closed for a pipe nobody needs to name that
// way.
func foldRune(r rune) rune {
	if r < utf8.RuneSelf {
		if 'A' <= r && r <= 'Z' {
			r += 'a' - 'A'
		}
		return r
	}
	u := unicode.ToUpper(r)
	m := u
	for f := unicode.SimpleFold(u); f != u; f = unicode.SimpleFold(f) {
		if f < m {
			m = f
		}
	}
	return unicode.ToLower(m)
}

// isControl reports C0 and C1 control characters and DEL.
func isControl(r rune) bool { return invisible.IsControl(r) }

// isInvisible reports characters that render as nothing or break a line
// (package invisible holds the one list): they can split a word such as
// "pipe" for a human reader or a naive filter while some layer drops them.
func isInvisible(r rune) bool { return invisible.Is(r) }

// appendFolded appends s case-folded with `\` as the only separator. Control
// characters, invisible characters and bytes that are not UTF-8 become U+FFFD,
// so a rendering of a hostile path cannot inject line breaks or bidi controls
// into the messages that quote it.
func appendFolded(dst []byte, s string) []byte {
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			switch {
			case 'A' <= c && c <= 'Z':
				c += 'a' - 'A'
			case c == '/':
				c = '\\'
			case c < 0x20 || c == 0x7f:
				dst = append(dst, "\uFFFD"...)
				i++
				continue
			}
			dst = append(dst, c)
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		i += size
		if r == utf8.RuneError || isControl(r) || isInvisible(r) {
			dst = append(dst, "\uFFFD"...)
			continue
		}
		dst = utf8.AppendRune(dst, foldRune(r))
	}
	return dst
}

// CanonicalPipeName folds a pipe name or a pattern over pipe names the way
// Classify folds Result.Pipe: case-folded, `\` as the separator. Policies
// should pass their patterns through it so that both sides of a match use
// one spelling. It leaves glob syntax and dots alone.
func CanonicalPipeName(name string) string {
	return string(appendFolded(nil, name))
}
