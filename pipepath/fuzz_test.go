package pipepath

import (
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"
)

// FuzzClassify checks the properties an attacker would try to break: no
// panic, a well-formed result, idempotence, and that spelling variations
// Windows treats as the same path never change the verdict.
func FuzzClassify(f *testing.F) {
	for _, tc := range classifyCases {
		f.Add(tc.in)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		r := Classify(raw)
		checkResult(t, raw, r)

		if r.Class == Pipe {
			again := Classify(r.Normalized)
			if again.Class != Pipe || again.Pipe != r.Pipe {
				t.Errorf("not idempotent: Classify(%q) = pipe %q, but Classify(%q) = %q %q", raw, r.Pipe, r.Normalized, again.Class, again.Pipe)
			}
		}
		for name, variant := range map[string]string{
			"upper case":        mapRunes(raw, unicode.ToUpper),
			"lower case":        mapRunes(raw, unicode.ToLower),
			"swapped slashes":   swapSeparators(raw),
			"surrounding space": " " + raw + "\t",
		} {
			if v := Classify(variant); v.Class != r.Class || v.Pipe != r.Pipe {
				t.Errorf("%s changes the verdict: Classify(%q) = %q %q, Classify(%q) = %q %q", name, raw, r.Class, r.Pipe, variant, v.Class, v.Pipe)
			}
		}
		if r.Class != Pipe {
			return
		}
		if v := Classify(raw + "."); v.Class == NotPipe {
			t.Errorf("a trailing dot turns pipe %q (%q) into NotPipe", r.Pipe, raw)
		}
		s := strings.TrimSpace(raw)
		lead := len(s) - len(strings.TrimLeft(s, `\/`))
		for i, doubled := lead, 0; i < len(s) && doubled < 4; i++ {
			if s[i] != '\\' && s[i] != '/' {
				continue
			}
			doubled++
			variant := s[:i+1] + s[i:]
			if v := Classify(variant); v.Class == NotPipe {
				t.Errorf("a doubled separator turns pipe %q (%q) into NotPipe: %q", r.Pipe, raw, variant)
			}
		}
	})
}

// FuzzJoinSubPath checks that a subPath which leaves a pipe-like volume is
// never judged an ordinary path.
func FuzzJoinSubPath(f *testing.F) {
	f.Add(`\\.\pipe\`, csi)
	f.Add(`\\.\pipe\a`, `..\b`)
	f.Add(`\\.\`, `pipe\x`)
	f.Add(`C:\`, `..\..\pipe`)
	f.Add(`C:\data`, `\\.\pipe\x`)
	f.Add(`\\localhost`, `\x`)
	f.Add("\\\\.\\pi\x00pe", `..`)
	f.Fuzz(func(t *testing.T, volume, subPath string) {
		joined := JoinSubPath(volume, subPath)
		r := Classify(joined)
		checkResult(t, joined, r)
		m := ClassifyMount(volume, subPath)
		checkResult(t, joined, m)
		sub := strings.TrimSpace(subPath)
		if sub == "" || subPathStaysInside(sub) || Classify(volume).Class == NotPipe {
			return
		}
		if r.Class != Ambiguous {
			t.Errorf("subPath %q leaves pipe-like volume %q, but Classify(%q) = %q", subPath, volume, joined, r.Class)
		}
		if m.Class != Ambiguous {
			t.Errorf("subPath %q leaves pipe-like volume %q, but ClassifyMount = %q", subPath, volume, m.Class)
		}
	})
}

func checkResult(t *testing.T, raw string, r Result) {
	t.Helper()
	switch r.Class {
	case Pipe:
		if r.Pipe == "" || r.Normalized != PipePrefix+r.Pipe || r.Reason != "" {
			t.Errorf("Classify(%q) = %+v: a pipe needs a name, its normalized path and no reason", raw, r)
		}
	case Ambiguous:
		if r.Pipe != "" || r.Reason == "" {
			t.Errorf("Classify(%q) = %+v: an ambiguous path needs a reason and no pipe name", raw, r)
		}
	case NotPipe:
		if r.Pipe != "" || r.Reason != "" {
			t.Errorf("Classify(%q) = %+v: an ordinary path has no pipe name or reason", raw, r)
		}
	default:
		t.Errorf("Classify(%q) has unknown class %q", raw, r.Class)
	}
	if !utf8.ValidString(r.Normalized) || strings.ContainsFunc(r.Normalized, func(c rune) bool { return isControl(c) || isInvisible(c) }) {
		t.Errorf("Classify(%q).Normalized = %q: it must be printable UTF-8", raw, r.Normalized)
	}
}

// mapRunes applies f to every rune of s and keeps bytes that are not UTF-8
// as they are, so that only letter case changes.
func mapRunes(s string, f func(rune) rune) string {
	var b strings.Builder
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b.WriteByte(s[i])
		} else {
			b.WriteRune(f(r))
		}
		i += size
	}
	return b.String()
}

// swapSeparators swaps `/` and `\` byte by byte, keeping every other byte.
func swapSeparators(s string) string {
	b := []byte(s)
	for i, c := range b {
		switch c {
		case '/':
			b[i] = '\\'
		case '\\':
			b[i] = '/'
		}
	}
	return string(b)
}
