package audit

import (
	"encoding/hex"
	"encoding/json"
	"reflect"
	"slices"
	"strconv"
	"unicode/utf8"
)

// appendEvent appends ev as one JSON object, the same bytes encoding/json's
// Marshal writes for it: fields in declaration order, empty optional fields
// left out, map keys sorted, strings escaped as Marshal escapes them (HTML
// characters, U+2028 and U+2029 as \u escapes, invalid UTF-8 as U+FFFD).
// Records have a fixed shape, so writing them directly avoids reflection;
// only the request body, at Request level, goes through encoding/json.
func appendEvent(b []byte, ev *Event) ([]byte, error) {
	return appendRecord(b, ev, nil)
}

// chainLink is a record's chain fields, written as its AnnotationSeq and
// AnnotationPrevHash without being added to its Annotations.
type chainLink struct {
	seq  uint64
	prev Hash
}

// appendRecord is appendEvent for the event with the annotations of ch
// (when not nil) set, in place of any the event has under their keys.
func appendRecord(b []byte, ev *Event, ch *chainLink) ([]byte, error) {
	b = append(b, `{"kind":`...)
	b = appendString(b, ev.Kind)
	b = append(b, `,"apiVersion":`...)
	b = appendString(b, ev.APIVersion)
	b = append(b, `,"level":`...)
	b = appendString(b, string(ev.Level))
	b = append(b, `,"auditID":`...)
	b = appendString(b, ev.AuditID)
	b = append(b, `,"stage":`...)
	b = appendString(b, string(ev.Stage))
	b = append(b, `,"requestURI":`...)
	b = appendString(b, ev.RequestURI)
	b = append(b, `,"verb":`...)
	b = appendString(b, ev.Verb)
	b = append(b, `,"user":`...)
	if u := ev.user; u != nil && u.describes(&ev.User) {
		b = append(b, u.json...)
	} else {
		b = appendUser(b, &ev.User)
	}
	if ev.UserAgent != "" {
		b = append(b, `,"userAgent":`...)
		b = appendString(b, ev.UserAgent)
	}
	if r := ev.ObjectRef; r != nil {
		b = append(b, `,"objectRef":`...)
		o := object{b: b}
		o.str("resource", r.Resource)
		o.str("name", r.Name)
		o.str("apiGroup", r.APIGroup)
		o.str("apiVersion", r.APIVersion)
		b = o.end()
	}
	if s := ev.ResponseStatus; s != nil {
		b = append(b, `,"responseStatus":`...)
		o := object{b: b}
		o.str("status", s.Status)
		o.str("message", s.Message)
		o.str("reason", s.Reason)
		if s.Code != 0 {
			o.key("code")
			o.b = strconv.AppendInt(o.b, int64(s.Code), 10)
		}
		b = o.end()
	}
	if len(ev.RequestObject) > 0 {
		body, err := json.Marshal(ev.RequestObject)
		if err != nil {
			return b, err
		}
		b = append(b, `,"requestObject":`...)
		b = append(b, body...)
	}
	b = append(b, `,"requestReceivedTimestamp":`...)
	b = ev.RequestReceivedTimestamp.appendJSON(b)
	b = append(b, `,"stageTimestamp":`...)
	b = ev.StageTimestamp.appendJSON(b)
	if ch != nil {
		b = append(b, `,"annotations":`...)
		b = appendAnnotations(b, ev.Annotations, ch)
	} else if len(ev.Annotations) > 0 {
		b = append(b, `,"annotations":`...)
		b = appendMap(b, ev.Annotations, appendString)
	}
	return append(b, '}'), nil
}

// appendAnnotations writes m with the chain fields of ch among them, keys
// sorted, as appendMap writes m with those two keys set.
func appendAnnotations(b []byte, m map[string]string, ch *chainLink) []byte {
	var buf [16]string
	keys := append(buf[:0], AnnotationSeq, AnnotationPrevHash)
	for k := range m {
		if k != AnnotationSeq && k != AnnotationPrevHash {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	b = append(b, '{')
	for i, k := range keys {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendString(b, k)
		b = append(b, ':', '"')
		switch k {
		case AnnotationSeq:
			b = strconv.AppendUint(b, ch.seq, 10)
		case AnnotationPrevHash:
			b = hex.AppendEncode(b, ch.prev[:])
		default:
			b = appendStringBody(b, m[k])
		}
		b = append(b, '"')
	}
	return append(b, '}')
}

func appendUser(b []byte, u *UserInfo) []byte {
	b = append(b, `{"username":`...)
	b = appendString(b, u.Username)
	if u.UID != "" {
		b = append(b, `,"uid":`...)
		b = appendString(b, u.UID)
	}
	if len(u.Groups) > 0 {
		b = append(b, `,"groups":`...)
		b = appendStrings(b, u.Groups)
	}
	if len(u.Extra) > 0 {
		b = append(b, `,"extra":`...)
		b = appendMap(b, u.Extra, appendStrings)
	}
	return append(b, '}')
}

// sameSlice reports whether a and b are the same slice: same length and,
// unless empty, same first element; nil and empty differ, as they encode
// differently.
func sameSlice(a, b []string) bool {
	if len(a) != len(b) || (a == nil) != (b == nil) {
		return false
	}
	return len(a) == 0 || &a[0] == &b[0]
}

// sameMap reports whether a and b are the same map (not merely equal).
func sameMap(a, b map[string][]string) bool {
	return reflect.ValueOf(a).UnsafePointer() == reflect.ValueOf(b).UnsafePointer()
}

// appendStrings writes a list; nil is null, as encoding/json writes it.
func appendStrings(b []byte, l []string) []byte {
	if l == nil {
		return append(b, "null"...)
	}
	b = append(b, '[')
	for i, s := range l {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendString(b, s)
	}
	return append(b, ']')
}

// appendMap writes m as a JSON object with its keys sorted, each value
// written by value.
func appendMap[V any](b []byte, m map[string]V, value func([]byte, V) []byte) []byte {
	var buf [16]string
	keys := buf[:0]
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	b = append(b, '{')
	for i, k := range keys {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendString(b, k)
		b = append(b, ':')
		b = value(b, m[k])
	}
	return append(b, '}')
}

// object writes a JSON object of omitempty fields.
type object struct {
	b    []byte
	more bool
}

func (o *object) key(k string) {
	if o.more {
		o.b = append(o.b, ',')
	} else {
		o.b = append(o.b, '{')
		o.more = true
	}
	o.b = append(o.b, '"')
	o.b = append(o.b, k...)
	o.b = append(o.b, '"', ':')
}

func (o *object) str(k, v string) {
	if v != "" {
		o.key(k)
		o.b = appendString(o.b, v)
	}
}

func (o *object) end() []byte {
	if !o.more {
		return append(o.b, '{', '}')
	}
	return append(o.b, '}')
}

const hexDigits = "0123456789abcdef"

// safeASCII marks the ASCII bytes written as they are; bytes from
// utf8.RuneSelf up are false and handled as runes.
var safeASCII = func() (t [256]bool) {
	for c := 0x20; c < utf8.RuneSelf; c++ {
		t[c] = c != '"' && c != '\\' && c != '<' && c != '>' && c != '&'
	}
	return t
}()

// appendString writes s as a JSON string the way encoding/json does with
// HTML escaping on.
func appendString(b []byte, s string) []byte {
	b = append(b, '"')
	b = appendStringBody(b, s)
	return append(b, '"')
}

// appendStringBody writes s escaped as appendString does, without quotes.
func appendStringBody(b []byte, s string) []byte {
	start := 0
	for i := 0; i < len(s); {
		for i < len(s) && safeASCII[s[i]] {
			i++
		}
		if i == len(s) {
			break
		}
		c := s[i]
		if c < utf8.RuneSelf {
			b = append(b, s[start:i]...)
			switch c {
			case '"', '\\':
				b = append(b, '\\', c)
			case '\b':
				b = append(b, '\\', 'b')
			case '\f':
				b = append(b, '\\', 'f')
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				// Control characters and <, >, &.
				b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
			i += size
			start = i
			continue
		}
		// U+2028 and U+2029 end lines in JavaScript.
		if r == '\u2028' || r == '\u2029' {
			b = append(b, s[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', hexDigits[r&0xf])
			i += size
			start = i
			continue
		}
		i += size
	}
	return append(b, s[start:]...)
}
