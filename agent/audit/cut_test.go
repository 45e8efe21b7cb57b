package audit

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"
)

// TestCutStrings cuts strings whose encoding grows (escapes up to 6 bytes
// a byte), multi-byte characters and invalid UTF-8: the encoded result
// fits the limit, ends at a character boundary of the input, and says how
// many bytes were left out.
func TestCutStrings(t *testing.T) {
	inputs := map[string]string{
		"ascii":       strings.Repeat("a", 10000),
		"two-byte":    strings.Repeat("é", 5000),
		"four-byte":   "x" + strings.Repeat("𝄞", 3000),
		"html":        strings.Repeat("<", 3000),
		"controls":    strings.Repeat("\x01", 3000),
		"quotes":      strings.Repeat(`"\`, 3000),
		"invalid":     strings.Repeat("\xff", 3000),
		"separators":  strings.Repeat("\u2028", 3000),
		"mixed":       strings.Repeat("a<é\n\xff𝄞\u2029", 1000),
		"exactly fit": strings.Repeat("b", 100),
	}
	for name, s := range inputs {
		for _, limit := range []int{MaxRecordString, MaxRecordKey, 100} {
			got := CutString(s, limit)
			enc, _ := json.Marshal(got)
			if n := len(enc) - 2; n > limit {
				t.Errorf("%s, limit %d: encoded %d bytes", name, limit, n)
			}
			if b := appendStringBody(nil, got); len(b) != len(enc)-2 {
				t.Errorf("%s: encoded length %d, encoding/json %d", name, len(b), len(enc)-2)
			}
			if c, _ := appendCut(nil, s, limit); string(c) != string(appendStringBody(nil, got)) {
				t.Errorf("%s, limit %d: appendCut and CutString differ", name, limit)
			}
			fits := len(s) <= limit && utf8.ValidString(s) && !strings.ContainsAny(s, "<\"\\\n\x01\u2028")
			if fits {
				if got != s {
					t.Errorf("%s, limit %d: cut although it fits", name, limit)
				}
				continue
			}
			i := strings.Index(got, CutMarker)
			if i < 0 {
				t.Fatalf("%s, limit %d: no cut marker in %q", name, limit, got)
			}
			kept := got[:i]
			if !strings.HasPrefix(s, kept) || !utf8.RuneStart(s[len(kept)]) {
				t.Errorf("%s, limit %d: %q is not cut at a character boundary of the input", name, limit, kept)
			}
			if want := fmt.Sprintf("…[cut: %d bytes]", len(s)-len(kept)); got[i:] != want {
				t.Errorf("%s, limit %d: marker %q, want %q", name, limit, got[i:], want)
			}
			if len(kept) == 0 && limit >= 100 {
				t.Errorf("%s, limit %d: nothing kept", name, limit)
			}
		}
	}
}

// TestCutNamesTheField: a record whose strings are cut says which, in
// AnnotationCut, and one that needs no cut has no such annotation.
func TestCutNamesTheField(t *testing.T) {
	ev := request(1, DecisionDeny)
	b, _ := appendEvent(nil, ev)
	if strings.Contains(string(b), AnnotationCut) {
		t.Fatalf("record without long strings has %s: %s", AnnotationCut, b)
	}
	ev.ObjectRef.Name = strings.Repeat("/p", MaxRecordString)
	ev.Annotations[AnnotationReason] = "path " + ev.ObjectRef.Name + " is outside"
	b, _ = appendEvent(nil, ev)
	var got Event
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatal(err)
	}
	if want := "objectRef.name, annotations[pipeguard.io/reason]"; got.Annotations[AnnotationCut] != want {
		t.Errorf("%s = %q, want %q", AnnotationCut, got.Annotations[AnnotationCut], want)
	}
	if !strings.HasSuffix(got.ObjectRef.Name, fmt.Sprintf("…[cut: %d bytes]", len(ev.ObjectRef.Name)-(MaxRecordString-markerRoom))) {
		t.Errorf("name ends %q", got.ObjectRef.Name[len(got.ObjectRef.Name)-40:])
	}
}

// TestCutEncodedUser: a user encoded once for a connection is cut like any
// other, and each record written with it names the cut.
func TestCutEncodedUser(t *testing.T) {
	ev := request(1, DecisionAllow)
	ev.SetUser(EncodeUser(UserInfo{Username: strings.Repeat("\u2028", 2*MaxRecordString), Groups: []string{"g"}}))
	for range 2 {
		b, _ := appendEvent(nil, ev)
		var got Event
		if err := json.Unmarshal(b, &got); err != nil {
			t.Fatal(err)
		}
		if got.Annotations[AnnotationCut] != "user.username" || len(got.User.Username) > MaxRecordString || got.User.Groups[0] != "g" {
			t.Fatalf("cut %q, username of %d bytes, groups %v", got.Annotations[AnnotationCut], len(got.User.Username), got.User.Groups)
		}
	}
}
