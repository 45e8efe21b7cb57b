package invisible

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// Replacement is what Escape writes for each character it escapes.
const Replacement = '\uFFFD'

// blank are the characters that render as an empty cell although Unicode
// does not make them default-ignorable: they are symbols, not formatting,
// so a renderer draws them, as nothing.
var blank = &unicode.RangeTable{
	R16: []unicode.Range16{{Lo: 0x2800, Hi: 0x2800, Stride: 1}}, // BRAILLE PATTERN BLANK
	R32: []unicode.Range32{
		{Lo: 0x16fe4, Hi: 0x16fe4, Stride: 1}, // KHITAN SMALL SCRIPT FILLER
		{Lo: 0x1d159, Hi: 0x1d159, Stride: 1}, // MUSICAL SYMBOL NULL NOTEHEAD
	},
}

// tables are, together, the characters Is reports:
//   - Cf, the format characters: zero-width space and joiners, bidi
//     controls, the byte order mark, tags;
//   - Zl and Zp, U+2028 and U+2029, which end a line wherever a reader
//     honours them;
//   - the rest of Unicode's Default_Ignorable_Code_Point: the Hangul
//     fillers U+115F, U+1160, U+3164 and U+FFA0, the combining grapheme
//     joiner U+034F, the Khmer inherent vowels U+17B4 and U+17B5, the
//     variation selectors and the reserved ignorable ranges;
//   - blank, the symbols drawn as an empty cell.
//
// Spaces (Zs) are not among them: they show as a gap.
var tables = []*unicode.RangeTable{
	unicode.Cf, unicode.Zl, unicode.Zp,
	unicode.Other_Default_Ignorable_Code_Point, unicode.Variation_Selector,
	blank,
}

// Is reports whether r renders as nothing or breaks a line, so that a
// reader cannot see it where it stands. Control characters are not
// included: IsControl reports those.
func Is(r rune) bool {
	return r >= 0xad && unicode.IsOneOf(tables, r)
}

// IsControl reports the C0 and C1 control characters and DEL (Cc).
func IsControl(r rune) bool {
	return r < 0x20 || (0x7f <= r && r <= 0x9f)
}

// Hidden reports whether Escape replaces r: a control character, a
// character Is reports, or U+FFFD itself, which may stand for bytes that
// were not UTF-8.
func Hidden(r rune) bool {
	return IsControl(r) || r == utf8.RuneError || Is(r)
}

// Escape returns s with every hidden character, and every byte that is not
// UTF-8, replaced by U+FFFD, so that a text quoting a hostile string keeps
// its lines and shows that something was there. Line breaks are escaped
// too: a caller that joins texts with "\n" escapes each text first.
func Escape(s string) string {
	// IndexFunc reads a byte that is not UTF-8 as U+FFFD, which is hidden.
	i := strings.IndexFunc(s, Hidden)
	if i < 0 {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + 2)
	b.WriteString(s[:i])
	for _, r := range s[i:] {
		if Hidden(r) {
			r = Replacement
		}
		b.WriteRune(r)
	}
	return b.String()
}
