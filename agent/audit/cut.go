package audit

// Bounds of a record. Every string that enters a record is cut to a known
// encoded size, with a visible marker, and every list and map to a known
// length, so that a record has a known maximum size (MaxRecordLine)
// whatever its caller sends: a user agent of megabytes, a path of
// megabytes, a message that quotes them.

import (
	"strconv"
	"strings"
	"unicode/utf8"
)

const (
	// MaxRecordString bounds each string value of a record, as encoded:
	// the bytes between its quotes, escapes and cut marker included. A
	// longer one is cut at a character boundary and ends with the marker
	// CutMarker, and the record's AnnotationCut names the field.
	MaxRecordString = 4096
	// MaxRecordKey bounds each key of the annotations and of the user's
	// extra, as encoded; a longer one is cut as a string is.
	MaxRecordKey = 256
	// MaxRecordUserValues bounds the values of the user's groups and
	// extra together (an extra key without values counts as one); those
	// beyond it are left out, and AnnotationCut says how many.
	MaxRecordUserValues = 32
	// MaxRecordAnnotations bounds the annotations of a record besides its
	// chain fields and AnnotationCut; those beyond it, in key order, are
	// left out, and AnnotationCut says how many.
	MaxRecordAnnotations = 24
	// MaxRecordLine is the most bytes one record's line holds, without
	// its newline: a Request-level body is left out of a record that would
	// reach MaxRecordBytes with it, and every other field is bounded above.
	MaxRecordLine = 512 << 10
)

// CutMarker starts what ends a cut string: "…[cut: N bytes]", N being how
// many bytes of the original string were left out.
const CutMarker = "…[cut: "

// AnnotationCut lists, comma-separated, the fields of a record that were
// cut or shortened, e.g. "userAgent, objectRef.name,
// annotations[pipeguard.io/reason]".
const AnnotationCut = "pipeguard.io/cut"

// markerRoom is the most bytes a cut marker takes.
const markerRoom = len(CutMarker) + 20 + len(" bytes]")

// recordFixed bounds what a record holds besides its bounded strings,
// keys and lists: punctuation, field names, numbers, timestamps and the
// chain fields.
const recordFixed = 2048

// Every field bounded, a record without its body fits MaxRecordLine: 17
// top-level, user and response strings, the user's values and keys, the
// annotations and AnnotationCut.
const _ = uint(MaxRecordLine - (recordFixed +
	17*(MaxRecordString+4) +
	MaxRecordUserValues*(MaxRecordString+MaxRecordKey+8) +
	MaxRecordAnnotations*(MaxRecordString+MaxRecordKey+6) +
	MaxRecordString + 32))

// cutList collects the names of the fields cut while a record is encoded;
// it allocates only when something is cut.
type cutList struct {
	names []string
}

func (c *cutList) add(name string) {
	if len(c.names) > 0 && c.names[len(c.names)-1] == name {
		return // each of a list's values
	}
	c.names = append(c.names, name)
}

func (c *cutList) any() bool { return len(c.names) > 0 }

func (c *cutList) String() string { return strings.Join(c.names, ", ") }

// runeEncoding returns the size of the rune at s[i] and how many bytes
// appendStringBody writes for it.
func runeEncoding(s string, i int) (size, enc int) {
	c := s[i]
	if c < utf8.RuneSelf {
		switch {
		case safeASCII[c]:
			return 1, 1
		case c == '"' || c == '\\' || c == '\b' || c == '\f' || c == '\n' || c == '\r' || c == '\t':
			return 1, 2
		}
		return 1, 6
	}
	r, size := utf8.DecodeRuneInString(s[i:])
	if r == utf8.RuneError && size == 1 || r == '\u2028' || r == '\u2029' {
		return size, 6
	}
	return size, size
}

// fitPrefix returns the length of the longest prefix of s, ending at a
// character boundary, whose encoding takes at most limit bytes, and
// whether that is all of s. It reads at most limit+1 characters of s.
func fitPrefix(s string, limit int) (int, bool) {
	n := 0
	for i := 0; i < len(s); {
		size, enc := runeEncoding(s, i)
		if n+enc > limit {
			return i, false
		}
		n += enc
		i += size
	}
	return len(s), true
}

// appendCut writes s as a JSON string body (appendStringBody) of at most
// limit bytes: when its encoding is longer, it is cut at a character
// boundary and ends with the cut marker, and appendCut reports true.
func appendCut(b []byte, s string, limit int) ([]byte, bool) {
	if len(s)*6 <= limit {
		// No character encodes to more than 6 bytes per byte.
		return appendStringBody(b, s), false
	}
	if n, all := fitPrefix(s, limit); all {
		return appendStringBody(b, s[:n]), false
	}
	n, _ := fitPrefix(s, limit-markerRoom)
	b = appendStringBody(b, s[:n])
	b = append(b, CutMarker...)
	b = strconv.AppendInt(b, int64(len(s)-n), 10)
	return append(b, " bytes]"...), true
}

// appendCutString is appendCut with quotes, naming the field in cut when
// it is cut.
func appendCutString(b []byte, s string, limit int, cut *cutList, name string) []byte {
	b = append(b, '"')
	b, c := appendCut(b, s, limit)
	if c {
		cut.add(name)
	}
	return append(b, '"')
}

// CutString returns s cut as a record cuts its strings: at most limit
// bytes as encoded in JSON, with the cut marker when it was cut.
func CutString(s string, limit int) string {
	if _, all := fitPrefix(s, limit); all {
		return s
	}
	n, _ := fitPrefix(s, limit-markerRoom)
	return s[:n] + CutMarker + strconv.Itoa(len(s)-n) + " bytes]"
}

// shortKey is a key as cut for naming it in AnnotationCut.
func shortKey(k string) string { return CutString(k, 64) }

// cutTree returns v, a request body as encoding/json writes it, with every
// string (keys included) cut to MaxRecordString; v itself is not changed,
// and is returned as it is when nothing in it needs cutting.
func cutTree(v any) (any, bool) {
	switch t := v.(type) {
	case string:
		c := CutString(t, MaxRecordString)
		return c, len(c) != len(t)
	case map[string]any:
		var out map[string]any
		for k, e := range t {
			ck := CutString(k, MaxRecordKey)
			ce, changed := cutTree(e)
			if changed || len(ck) != len(k) {
				if out == nil {
					out = make(map[string]any, len(t))
					for k2, e2 := range t {
						out[k2] = e2
					}
				}
				delete(out, k)
				out[ck] = ce
			}
		}
		if out == nil {
			return v, false
		}
		return out, true
	case []any:
		var out []any
		for i, e := range t {
			if ce, changed := cutTree(e); changed {
				if out == nil {
					out = append([]any(nil), t...)
				}
				out[i] = ce
			}
		}
		if out == nil {
			return v, false
		}
		return out, true
	case []string:
		var out []string
		for i, e := range t {
			if ce := CutString(e, MaxRecordString); len(ce) != len(e) {
				if out == nil {
					out = append([]string(nil), t...)
				}
				out[i] = ce
			}
		}
		if out == nil {
			return v, false
		}
		return out, true
	case map[string]string:
		m := make(map[string]any, len(t))
		for k, e := range t {
			m[k] = e
		}
		if out, changed := cutTree(m); changed {
			return out, true
		}
		return v, false
	}
	return v, false
}
