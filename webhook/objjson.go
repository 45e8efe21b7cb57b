package webhook

import (
	"fmt"
	"strings"

	kjson "sigs.k8s.io/json"
)

// The handler reads objects with its own JSON reader, written for the few
// fields it needs: a general decoder spends most of a review's time on
// reflection and on validating fields nobody reads. The reader gives the
// results sigs.k8s.io/json gives (FuzzDecodeMatchesJSON checks this), with
// one deliberate difference: a field it reads may appear only once in an
// object. The API server never sends a repeated field, and refusing one
// means no two parsers can disagree about which copy counts.
//
// Like the API server, the reader matches field names case-sensitively;
// null leaves a field at its zero value; unknown fields are checked for
// syntax and skipped. Strings with \u escapes or non-ASCII bytes are
// unquoted by sigs.k8s.io/json so that their value is exactly its value;
// ASCII strings whose escapes are single characters (the doubled
// backslashes of every Windows path) are unquoted here.

// maxDepth is the nesting limit encoding/json applies.
const maxDepth = 10000

// reader holds the state of one decode. Methods record the first error and
// do nothing after it, so decoding code reads straight through; callers
// check err at the end.
type reader struct {
	data []byte
	// src is data as one string, so that a plain string value is a
	// substring of it rather than an allocation of its own.
	src   string
	pos   int
	depth int
	key   []byte // the name of the field being read, for errors
	err   error
}

// decodeObject reads data, a JSON object or null, with read and checks that
// nothing but white space follows it.
func decodeObject(data []byte, read func(r *reader)) error {
	r := &reader{data: data, src: string(data)}
	read(r)
	if r.err == nil {
		r.key = nil
		if r.space(); r.pos < len(r.data) {
			r.fail("found %s after the object, want the end of the input", r.describe())
		}
	}
	return r.err
}

func (r *reader) fail(format string, args ...any) {
	if r.err != nil {
		return
	}
	msg := fmt.Sprintf(format, args...)
	if r.key != nil {
		r.err = fmt.Errorf("field %q, byte %d: %s", r.key, r.pos, msg)
	} else {
		r.err = fmt.Errorf("byte %d: %s", r.pos, msg)
	}
}

func (r *reader) space() {
	for r.pos < len(r.data) {
		switch r.data[r.pos] {
		case ' ', '\t', '\n', '\r':
			r.pos++
		default:
			return
		}
	}
}

// peek returns the next byte that is not white space, or 0 at the end.
func (r *reader) peek() byte {
	r.space()
	if r.pos < len(r.data) {
		return r.data[r.pos]
	}
	return 0
}

// describe names what comes next, for errors.
func (r *reader) describe() string {
	switch c := r.peek(); {
	case r.pos >= len(r.data):
		return "end of input"
	case c == '{':
		return "an object"
	case c == '[':
		return "an array"
	case c == '"':
		return "a string"
	case r.startsWith("true") || r.startsWith("false"):
		return "a boolean"
	case r.startsWith("null"):
		return "null"
	case c == '-' || (c >= '0' && c <= '9'):
		return "a number"
	default:
		return fmt.Sprintf("character %q", c)
	}
}

func (r *reader) startsWith(word string) bool {
	return len(r.data)-r.pos >= len(word) && string(r.data[r.pos:r.pos+len(word)]) == word
}

// null consumes a null and reports whether there was one.
func (r *reader) null() bool {
	if r.err != nil || r.peek() != 'n' {
		return false
	}
	r.literal("null")
	return r.err == nil
}

func (r *reader) literal(word string) {
	if !r.startsWith(word) {
		r.fail("invalid literal, want %s", word)
		return
	}
	r.pos += len(word)
}

// openObject consumes the '{' of an object. It returns false, having
// consumed nothing more, for null, and false with an error for anything
// else.
func (r *reader) openObject() bool {
	if r.err != nil || r.null() {
		return false
	}
	if r.peek() != '{' {
		r.fail("want an object, found %s", r.describe())
		return false
	}
	if r.depth++; r.depth > maxDepth {
		r.fail("objects and arrays nested deeper than %d", maxDepth)
		return false
	}
	r.pos++
	r.key = nil
	return true
}

// field reads the next field name of an open object and its colon, leaving
// the name in r.key. It returns false after consuming the closing '}'.
func (r *reader) field(first bool) bool {
	if r.err != nil {
		return false
	}
	switch r.peek() {
	case '}':
		r.pos++
		r.depth--
		return false
	case ',':
		if first {
			r.fail("unexpected ',' at the start of an object")
			return false
		}
		r.pos++
		if r.peek() != '"' {
			r.fail("want a field name after ',', found %s", r.describe())
			return false
		}
	case '"':
		if !first {
			r.fail("want ',' or '}' after a field, found %s", r.describe())
			return false
		}
	default:
		r.fail("want a field name or '}', found %s", r.describe())
		return false
	}
	name := r.rawString()
	end := r.pos
	if r.err != nil {
		return false
	}
	if r.peek() != ':' {
		r.fail("want ':' after field name %q, found %s", name, r.describe())
		return false
	}
	r.pos++
	r.key = name
	if hasEscapeOrNonASCII(name) {
		var s string
		if err := kjson.UnmarshalCaseSensitivePreserveInts(r.data[end-len(name)-2:end], &s); err != nil {
			r.fail("field name: %v", err)
			return false
		}
		r.key = []byte(s)
	}
	return true
}

// fields iterates over the fields of an object: for each one it calls read
// with the field's name, and read consumes the value. seen tracks the
// fields read has claimed (by the bit it returns), so that a repeated one
// is refused; read returns 0 for a field it skipped.
func (r *reader) fields(read func(name []byte) uint32) {
	if !r.openObject() {
		return
	}
	var seen uint32
	for first := true; r.field(first); first = false {
		name := r.key
		bit := read(name)
		if r.err != nil {
			return
		}
		if bit != 0 {
			if seen&bit != 0 {
				r.key = name
				r.fail("the field appears more than once in its object")
				return
			}
			seen |= bit
		}
		r.key = name
	}
}

// array iterates over the elements of an array, calling read for each with
// its index; read consumes the element. It returns false for null.
func (r *reader) array(read func(i int)) bool {
	if r.err != nil || r.null() {
		return false
	}
	if r.peek() != '[' {
		r.fail("want an array, found %s", r.describe())
		return false
	}
	if r.depth++; r.depth > maxDepth {
		r.fail("objects and arrays nested deeper than %d", maxDepth)
		return false
	}
	r.pos++
	if r.peek() == ']' {
		r.pos++
		r.depth--
		return true
	}
	key := r.key
	for i := 0; ; i++ {
		read(i)
		r.key = key
		if r.err != nil {
			return false
		}
		switch r.peek() {
		case ',':
			r.pos++
		case ']':
			r.pos++
			r.depth--
			return true
		default:
			r.fail("want ',' or ']' after an array element, found %s", r.describe())
			return false
		}
	}
}

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
		r.fail("%v", err)
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
