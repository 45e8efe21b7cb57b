package invisible_test

import (
	"fmt"
	"testing"
	"unicode/utf8"

	"github.com/pipeguard/pipeguard/internal/invisible"
	"github.com/pipeguard/pipeguard/internal/testing/invisibletest"
)

func TestIs(t *testing.T) {
	for _, c := range invisibletest.Samples() {
		if !invisible.Hidden(c.Rune) || invisible.Is(c.Rune) == invisible.IsControl(c.Rune) {
			t.Errorf("%s U+%04X: Is %v, IsControl %v, Hidden %v; want Hidden and one of the others", c.Name, c.Rune, invisible.Is(c.Rune), invisible.IsControl(c.Rune), invisible.Hidden(c.Rune))
		}
	}
	for _, r := range []rune{'a', ' ', '\\', '.', 'é', 'ſ', 'İ', 0x3000, 0x00a0, 0xff3c, 0x1f600, 0x05ff, 0x2027, 0x2030, 0x3163, 0x3165, 0x27ff, 0x2801} {
		if invisible.Hidden(r) {
			t.Errorf("U+%04X %q is hidden; it shows as itself", r, r)
		}
	}
	for _, r := range []rune{0, '\n', '\r', '\t', 0x1b, 0x7f, 0x85, 0x9f} {
		if invisible.Is(r) || !invisible.IsControl(r) || !invisible.Hidden(r) {
			t.Errorf("U+%04X: Is %v IsControl %v Hidden %v, want a control character", r, invisible.Is(r), invisible.IsControl(r), invisible.Hidden(r))
		}
	}
}

func TestEscape(t *testing.T) {
	for _, c := range invisibletest.Samples() {
		in := fmt.Sprintf("csi%cproxy", c.Rune)
		if got := invisible.Escape(in); got != "csi\uFFFDproxy" {
			t.Errorf("%s: Escape(%q) = %q, want %q", c.Name, in, got, "csi\uFFFDproxy")
		}
	}
	for in, want := range map[string]string{
		"":                         "",
		`\\.\pipe\csi-proxy-v1`:    `\\.\pipe\csi-proxy-v1`,
		"é ſ 日本":                   "é ſ 日本",
		"line\nforged":             "line\uFFFDforged",
		"bad\xffbyte":              "bad\uFFFDbyte",
		"\u3164\u3164":             "\uFFFD\uFFFD",
		"keep \uFFFD as it is":     "keep \uFFFD as it is",
		"ok then \u2028 then \x00": "ok then \uFFFD then \uFFFD",
	} {
		got := invisible.Escape(in)
		if got != want || !utf8.ValidString(got) {
			t.Errorf("Escape(%q) = %q, want %q", in, got, want)
		}
	}
}

// An escaped text is its own escape, and nothing hidden is left in it.
func TestEscapeIsIdempotent(t *testing.T) {
	for r := rune(0); r <= utf8.MaxRune; r++ {
		s := "a" + string(r) + "b"
		e := invisible.Escape(s)
		if invisible.Escape(e) != e {
			t.Fatalf("Escape(Escape(%q)) changed it again", s)
		}
		for _, c := range e {
			if invisible.Hidden(c) && c != invisible.Replacement {
				t.Fatalf("Escape(%q) = %q still holds U+%04X", s, e, c)
			}
		}
	}
}

func BenchmarkEscapePlain(b *testing.B) {
	s := `[protected-pipe-mount] container "driver" mounts \\.\pipe\csi-proxy-disk-v1 through volume "pipe"`
	for b.Loop() {
		_ = invisible.Escape(s)
	}
}
