package decode

import (
	"strings"

	kjson "sigs.k8s.io/json"
)

// Values: strings, booleans, and the values the reader skips.

// str reads a string into dst; null leaves dst alone.
func (r *reader) str(dst *string) {
	if r.err != nil || r.null() {
		return
	}
	if r.peek() != '"' {
		r.fail("want a string, found %s", r.describe())
		return
	}
	raw := r.rawString()
	if r.err != nil {
		return
	}
	if !hasEscapeOrNonASCII(raw) {
		end := r.pos - 1 // the closing quote
		*dst = r.src[end-len(raw) : end]
		return
	}
	if s, ok := unescapeASCII(raw); ok {
		*dst = s
		return
	}
	if err := kjson.UnmarshalCaseSensitivePreserveInts(r.data[r.pos-len(raw)-2:r.pos], dst); err != nil {
		r.fail("%w", err)
	}
}

// boolean reads true or false into dst; null leaves dst alone.
func (r *reader) boolean(dst *bool) {
	if r.err != nil || r.null() {
		return
	}
	switch r.peek() {
	case 't':
		r.literal("true")
		*dst = true
	case 'f':
		r.literal("false")
		*dst = false
	default:
		r.fail("want a boolean, found %s", r.describe())
	}
}

// boolPtr reads true or false into a new *bool; null sets it to nil.
func (r *reader) boolPtr(dst **bool) {
	if r.null() {
		*dst = nil
		return
	}
	var b bool
	r.boolean(&b)
	if r.err == nil {
		*dst = &b
	}
}

// rawString consumes a string and returns the bytes between its quotes,
// escapes still in place, after checking its syntax.
func (r *reader) rawString() []byte {
	r.pos++ // the opening quote, checked by the caller
	start := r.pos
	for r.pos < len(r.data) {
		// Most bytes are plain; step over them without the switch.
		for r.pos < len(r.data) && plain[r.data[r.pos]] {
			r.pos++
		}
		if r.pos >= len(r.data) {
			break
		}
		c := r.data[r.pos]
		switch {
		case c == '"':
			r.pos++
			return r.data[start : r.pos-1]
		case c == '\\':
			r.pos++
			if r.pos >= len(r.data) {
				break
			}
			switch r.data[r.pos] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				r.pos++
			case 'u':
				r.pos++
				for range 4 {
					if r.pos >= len(r.data) || !isHex(r.data[r.pos]) {
						r.fail("invalid \\u escape in a string")
						return nil
					}
					r.pos++
				}
			default:
				r.fail("invalid escape \\%c in a string", r.data[r.pos])
				return nil
			}
		case c < 0x20:
			r.fail("control character %#x in a string", c)
			return nil
		default:
			r.pos++
		}
	}
	r.fail("unterminated string")
	return nil
}

// skip consumes one value of any kind, checking its syntax.
func (r *reader) skip() {
	if r.err != nil {
		return
	}
	switch c := r.peek(); {
	case c == '{':
		key := r.key
		r.fields(func([]byte) uint32 { r.skip(); return 0 })
		r.key = key
	case c == '[':
		r.array(func(int) { r.skip() })
	case c == '"':
		r.rawString()
	case c == 't':
		r.literal("true")
	case c == 'f':
		r.literal("false")
	case c == 'n':
		r.literal("null")
	case c == '-' || (c >= '0' && c <= '9'):
		r.number()
	default:
		r.fail("want a value, found %s", r.describe())
	}
}

// number consumes a number: -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
func (r *reader) number() {
	if r.data[r.pos] == '-' {
		r.pos++
	}
	switch {
	case r.pos < len(r.data) && r.data[r.pos] == '0':
		r.pos++
	case r.pos < len(r.data) && r.data[r.pos] >= '1' && r.data[r.pos] <= '9':
		r.digits()
	default:
		r.fail("invalid number")
		return
	}
	if r.pos < len(r.data) && r.data[r.pos] == '.' {
		r.pos++
		if !r.digits() {
			r.fail("invalid number: no digits after '.'")
			return
		}
	}
	if r.pos < len(r.data) && (r.data[r.pos] == 'e' || r.data[r.pos] == 'E') {
		r.pos++
		if r.pos < len(r.data) && (r.data[r.pos] == '+' || r.data[r.pos] == '-') {
			r.pos++
		}
		if !r.digits() {
			r.fail("invalid number: no digits in the exponent")
		}
	}
}

func (r *reader) digits() bool {
	start := r.pos
	for r.pos < len(r.data) && r.data[r.pos] >= '0' && r.data[r.pos] <= '9' {
		r.pos++
	}
	return r.pos > start
}

// plain marks the bytes a string can hold as they are: not a quote, a
// backslash or a control character.
var plain = func() (t [256]bool) {
	for c := 0x20; c < 256; c++ {
		t[c] = c != '"' && c != '\\'
	}
	return t
}()

func isHex(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F'
}

// unescapeASCII unquotes the inside of an ASCII string whose escapes are
// all single characters, such as the doubled backslashes of every Windows
// path. It reports false for anything else (\u escapes, non-ASCII), which
// is left to sigs.k8s.io/json. The syntax was checked by rawString.
func unescapeASCII(raw []byte) (string, bool) {
	var out strings.Builder
	out.Grow(len(raw))
	for i := 0; i < len(raw); i++ {
		c := raw[i]
		switch {
		case c >= 0x80:
			return "", false
		case c != '\\':
			out.WriteByte(c)
			continue
		}
		i++
		switch raw[i] {
		case '"', '\\', '/':
			out.WriteByte(raw[i])
		case 'b':
			out.WriteByte('\b')
		case 'f':
			out.WriteByte('\f')
		case 'n':
			out.WriteByte('\n')
		case 'r':
			out.WriteByte('\r')
		case 't':
			out.WriteByte('\t')
		default:
			return "", false
		}
	}
	return out.String(), true
}

func hasEscapeOrNonASCII(s []byte) bool {
	for _, c := range s {
		if c == '\\' || c >= 0x80 {
			return true
		}
	}
	return false
}
