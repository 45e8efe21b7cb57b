package decode

import (
	"fmt"

	kjson "sigs.k8s.io/json"
)

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

// fail records an error at the current field and byte, unless one was
// recorded before.
func (r *reader) fail(format string, args ...any) {
	if r.err != nil {
		return
	}
	err := fmt.Errorf(format, args...)
	if r.key != nil {
		r.err = fmt.Errorf("field %q, byte %d: %w", r.key, r.pos, err)
	} else {
		r.err = fmt.Errorf("byte %d: %w", r.pos, err)
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
			r.fail("field name: %w", err)
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
