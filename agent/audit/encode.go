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
	var cut cutList
	b = append(b, `{"kind":`...)
	b = appendCutString(b, ev.Kind, MaxRecordString, &cut, "kind")
	b = append(b, `,"apiVersion":`...)
	b = appendCutString(b, ev.APIVersion, MaxRecordString, &cut, "apiVersion")
	b = append(b, `,"level":`...)
	b = appendCutString(b, string(ev.Level), MaxRecordString, &cut, "level")
	b = append(b, `,"auditID":`...)
	b = appendCutString(b, ev.AuditID, MaxRecordString, &cut, "auditID")
	b = append(b, `,"stage":`...)
	b = appendCutString(b, string(ev.Stage), MaxRecordString, &cut, "stage")
	b = append(b, `,"requestURI":`...)
	b = appendCutString(b, ev.RequestURI, MaxRecordString, &cut, "requestURI")
	b = append(b, `,"verb":`...)
	b = appendCutString(b, ev.Verb, MaxRecordString, &cut, "verb")
	b = append(b, `,"user":`...)
	if u := ev.user; u != nil && u.describes(&ev.User) {
		b = append(b, u.json...)
		for _, n := range u.cut {
			cut.add(n)
		}
	} else {
		b = appendUser(b, &ev.User, &cut)
	}
	if ev.UserAgent != "" {
		b = append(b, `,"userAgent":`...)
		b = appendCutString(b, ev.UserAgent, MaxRecordString, &cut, "userAgent")
	}
	if r := ev.ObjectRef; r != nil {
		b = append(b, `,"objectRef":`...)
		o := object{b: b}
		o.str("resource", r.Resource)
		o.str("name", r.Name)
		o.str("apiGroup", r.APIGroup)
		o.str("apiVersion", r.APIVersion)
		b = o.end()
		for _, k := range o.cut {
			cut.add("objectRef." + k)
		}
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
		for _, k := range o.cut {
			cut.add("responseStatus." + k)
		}
	}
	if len(ev.RequestObject) > 0 {
		obj, changed := cutTree(ev.RequestObject)
		if changed {
			cut.add("requestObject")
		}
		body, err := json.Marshal(obj)
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
	b = appendAnnotations(b, ev.Annotations, ch, &cut)
	return append(b, '}'), nil
}

// appendAnnotations writes the annotations field: m with the chain fields
// of ch (when not nil) and AnnotationCut (when cut names a field, or an
// annotation is cut) among them, keys sorted, as appendMap writes m with
// those keys set. Nothing is written for no annotations at all. Keys and
// values are cut, and annotations beyond MaxRecordAnnotations left out.
func appendAnnotations(b []byte, m map[string]string, ch *chainLink, cut *cutList) []byte {
	var buf [16]string
	keys := buf[:0]
	for k := range m {
		if ch == nil && k != AnnotationCut || k != AnnotationSeq && k != AnnotationPrevHash && k != AnnotationCut {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	if len(keys) > MaxRecordAnnotations {
		cut.add("annotations: " + strconv.Itoa(len(keys)-MaxRecordAnnotations) + " more left out")
		keys = keys[:MaxRecordAnnotations]
	}
	for _, k := range keys {
		if _, all := fitPrefix(k, MaxRecordKey); !all {
			cut.add("annotation key " + shortKey(k))
		}
		if _, all := fitPrefix(m[k], MaxRecordString); !all {
			cut.add("annotations[" + shortKey(k) + "]")
		}
	}
	if ch != nil {
		keys = append(keys, AnnotationSeq, AnnotationPrevHash)
	}
	_, hasCut := m[AnnotationCut]
	ownCut := cut.any()
	if ownCut || hasCut {
		keys = append(keys, AnnotationCut)
	}
	if len(keys) == 0 {
		return b
	}
	slices.Sort(keys)
	b = append(b, `,"annotations":{`...)
	for i, k := range keys {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, '"')
		b, _ = appendCut(b, k, MaxRecordKey)
		b = append(b, '"', ':', '"')
		switch {
		case ch != nil && k == AnnotationSeq:
			b = strconv.AppendUint(b, ch.seq, 10)
		case ch != nil && k == AnnotationPrevHash:
			b = hex.AppendEncode(b, ch.prev[:])
		case k == AnnotationCut:
			if ownCut {
				b, _ = appendCut(b, cut.String(), MaxRecordString)
			} else {
				b, _ = appendCut(b, m[k], MaxRecordString)
			}
		default:
			b, _ = appendCut(b, m[k], MaxRecordString)
		}
		b = append(b, '"')
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
	// cut holds the keys of the values cut; it is rarely used.
	cut []string
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
		o.b = append(o.b, '"')
		var c bool
		o.b, c = appendCut(o.b, v, MaxRecordString)
		o.b = append(o.b, '"')
		if c {
			o.cut = append(o.cut, k)
		}
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
