package pipepath

import (
	"testing"
	"unicode"
	"unicode/utf8"
)

// The fold must be stable and blind to case changes for every rune, or
// Classify would stop being idempotent and case-insensitive.
func TestFoldRuneIsStableAndCaseBlind(t *testing.T) {
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

func TestFoldRuneMergesWindowsCaseVariants(t *testing.T) {
	tests := map[string]struct {
		in   rune
		want rune
	}{
		"ASCII upper":    {'P', 'p'},
		"long s":         {'ſ', 's'},
		"dotless i":      {'ı', 'i'},
		"dotted capital": {'İ', 'i'},
		"Kelvin sign":    {'\u212a', 'k'},
		"final sigma":    {'ς', 'σ'},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			if got := foldRune(tc.in); got != tc.want {
				t.Errorf("foldRune(%U) = %U, want %U", tc.in, got, tc.want)
			}
		})
	}
}
