package pipepath

import (
	"testing"
	"unicode"
	"unicode/utf8"
)

// The fold must be stable and blind to case changes for every rune, or
// Classify would stop being idempotent and case-insensitive. Blind to
// upper-casing also means that two runes with the same uppercase form fold
// alike: whatever an upper-casing comparison such as Windows' treats as one
// name, the fold does too.
func TestFoldCoversUppercaseComparison(t *testing.T) {
	for r := rune(0); r <= unicode.MaxRune; r++ {
		if !utf8.ValidRune(r) {
			continue
		}
		f := foldRune(r)
		if g := foldRune(f); g != f {
			t.Errorf("foldRune(%U) = %U, but foldRune(%U) = %U", r, f, f, g)
		}
		if u := foldRune(unicode.ToUpper(r)); u != f {
			t.Errorf("foldRune(%U) = %U, but foldRune(ToUpper) = %U", r, f, u)
		}
		if l := foldRune(unicode.ToLower(r)); l != f {
			t.Errorf("foldRune(%U) = %U, but foldRune(ToLower) = %U", r, f, l)
		}
		if f == '\\' || f == '/' || f == '.' || f == ':' {
			if f != r {
				t.Errorf("foldRune(%U) = %q: folding must not create path syntax", r, f)
			}
		}
	}
}

// Letters that differ only in case are one name to Windows and to pipeguard.
func TestFoldRuneMergesCase(t *testing.T) {
	tests := map[string]struct {
		in   rune
		want rune
	}{
		"ASCII upper":       {'P', 'p'},
		"Latin-1 upper":     {'É', 'é'},
		"Greek upper":       {'Σ', 'σ'},
		"Greek final sigma": {'ς', 'σ'},
		"Cyrillic upper":    {'Д', 'д'},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			if got := foldRune(tc.in); got != tc.want {
				t.Errorf("foldRune(%U) = %U, want %U", tc.in, got, tc.want)
			}
			if up := unicode.ToUpper(tc.in); foldRune(up) != tc.want {
				t.Errorf("foldRune(%U) = %U, want %U", up, foldRune(up), tc.want)
			}
		})
	}
}

// Look-alikes pipeguard folds beyond Windows. Windows' upcase table leaves
// these letters alone, so on a node they name different pipes; pipeguard
// folds them into ASCII letters anyway, which can only make a name match a
// protected pipe (see foldRune).
func TestFoldRuneMergesLookalikesBeyondWindows(t *testing.T) {
	tests := map[string]struct {
		in   rune
		want rune
	}{
		"long s (U+017F)":           {'ſ', 's'},
		"dotless i (U+0131)":        {'ı', 'i'},
		"dotted capital I (U+0130)": {'İ', 'i'},
		"Kelvin sign (U+212A)":      {'\u212a', 'k'},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			if got := foldRune(tc.in); got != tc.want {
				t.Errorf("foldRune(%U) = %U, want %U", tc.in, got, tc.want)
			}
		})
	}
}
