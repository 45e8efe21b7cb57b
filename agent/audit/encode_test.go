package audit

import (
	"bytes"
	"encoding/json"
	"maps"
	"math"
	"strconv"
	"strings"
	"testing"
	"time"
)

// tricky strings: quotes, backslashes, every control character, HTML
// characters, JavaScript line separators, invalid and valid multi-byte UTF-8.
var tricky = []string{
	"",
	`plain /var/lib/kubelet/pods/a`,
	`"quoted" and \back\slashed\`,
	"\x00\x01\x02\x03\x04\x05\x06\x07\b\t\n\v\f\r\x0e\x0f\x10\x11\x12\x13\x14\x15\x16\x17\x18\x19\x1a\x1b\x1c\x1d\x1e\x1f",
	"\x7f del",
	"<script>alert('x')</script> & more",
	"line\u2028separator\u2029paragraph",
	"invalid \xff\xfe utf-8 \xc3 cut \xe2\x82",
	"surrogate half \xed\xa0\x80",
	"C:\\var\\lib\\kubelet\\pods\\ä\\日本\\🙂",
	"\ufffd real replacement char",
	"'; Remove-Item C:\\ -Recurse; '$(x)`n",
}

func trickyEvents() []*Event {
	at := time.Date(2025, 3, 1, 12, 0, 0, 123456789, time.FixedZone("x", 3600))
	var out []*Event
	// The minimal record: every optional field empty.
	out = append(out, &Event{})
	for i, s := range tricky {
		ev := &Event{
			Kind: Kind, APIVersion: APIVersion, Level: LevelRequest, AuditID: s, Stage: StageResponseComplete,
			RequestURI: "/v1.Filesystem/" + s, Verb: s,
			User: UserInfo{Username: s, UID: s, Groups: []string{s, "g"},
				Extra: map[string][]string{ExtraPID: {"42"}, s: {s, s}, "nil": nil, "empty": {}}},
			UserAgent:                s,
			ObjectRef:                &ObjectReference{Resource: "filesystem", Name: s, APIGroup: "csi-proxy", APIVersion: "v1"},
			ResponseStatus:           &Status{Status: "Failure", Message: s, Reason: "PermissionDenied", Code: 403},
			RequestObject:            map[string]any{"path": s, s: true, "n": int64(-7), "u": uint64(math.MaxUint64), "f": 1.5e-9, "l": []any{s, nil}, "m": map[string]any{s: s}},
			RequestReceivedTimestamp: MicroTime{at}, StageTimestamp: MicroTime{at.Add(time.Duration(i) * time.Microsecond)},
			Annotations: map[string]string{AnnotationDecision: DecisionDeny, AnnotationReason: s, s: s,
				AnnotationSeq: "7", AnnotationPrevHash: Genesis().String()},
		}
		out = append(out, ev)
		// Optional parts left out one at a time.
		out = append(out, &Event{Kind: Kind, Verb: s, User: UserInfo{Username: s, Groups: []string{}, Extra: map[string][]string{}},
			ObjectRef: &ObjectReference{}, ResponseStatus: &Status{}, RequestObject: map[string]any{},
			StageTimestamp: MicroTime{at}, Annotations: map[string]string{}})
		out = append(out, &Event{User: UserInfo{Extra: map[string][]string{s: {}}},
			ObjectRef: &ObjectReference{APIVersion: s}, ResponseStatus: &Status{Code: -1}})
	}
	return out
}

// TestAppendEventMatchesJSON checks that records are written exactly as
// encoding/json writes them, so the hand-written encoder changes no byte of
// the format.
func TestAppendEventMatchesJSON(t *testing.T) {
	for i, ev := range trickyEvents() {
		want, err := json.Marshal(ev)
		if err != nil {
			t.Fatal(err)
		}
		got, err := appendEvent([]byte("prefix"), ev)
		if err != nil {
			t.Fatalf("event %d: %v", i, err)
		}
		got, ok := bytes.CutPrefix(got, []byte("prefix"))
		if !ok || !bytes.Equal(got, want) {
			t.Errorf("event %d:\n got %s\nwant %s", i, got, want)
		}
		if !json.Valid(got) {
			t.Errorf("event %d: not valid JSON: %s", i, got)
		}
	}
}

func TestAppendEventRequestObjectError(t *testing.T) {
	ev := &Event{RequestObject: map[string]any{"bad": math.NaN()}}
	if _, err := appendEvent(nil, ev); err == nil {
		t.Fatal("a request body encoding/json cannot write must be an error")
	}
}

// FuzzAppendString compares string escaping with encoding/json.
func FuzzAppendString(f *testing.F) {
	for _, s := range tricky {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		want, _ := json.Marshal(s)
		if got := appendString(nil, s); !bytes.Equal(got, want) {
			t.Fatalf("appendString(%q) = %s, want %s", s, got, want)
		}
		ev := &Event{Verb: s, Annotations: map[string]string{s: s, strings.ToUpper(s): s}}
		if len(want)-2 > MaxRecordKey || len(strings.ToUpper(s))*6 > MaxRecordKey {
			// A longer key is cut (TestCut...); the value is not.
			ev.Annotations = map[string]string{"k": s}
		}
		if len(want)-2 > MaxRecordString {
			t.Skip("cut; see TestCutStrings")
		}
		want, _ = json.Marshal(ev)
		if got, _ := appendEvent(nil, ev); !bytes.Equal(got, want) {
			t.Fatalf("appendEvent with %q:\n got %s\nwant %s", s, got, want)
		}
	})
}

// TestWrittenRecordsRoundTrip writes tricky records through a Log and reads
// them back: the chain verifies and every string survives (invalid UTF-8 as
// U+FFFD, as encoding/json writes it).
func TestWrittenRecordsRoundTrip(t *testing.T) {
	dir := t.TempDir()
	l := openLog(t, Options{Path: dir + "/audit.log"})
	for _, s := range tricky {
		ev := request(1, DecisionDeny)
		ev.Annotations[AnnotationReason] = s
		ev.ResponseStatus = &Status{Status: "Failure", Message: s, Code: 403}
		if err := l.Append(ev, false); err != nil {
			t.Fatal(err)
		}
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if rep := verify(t, dir+"/audit.log"); !rep.OK() {
		t.Fatalf("verify: %+v", rep)
	}
	var got []string
	files, _ := Files(dir + "/audit.log")
	for _, f := range files {
		_ = ScanFile(f, func(r Record) error {
			if r.Err != nil {
				t.Fatal(r.Err)
			}
			if !r.Event.IsCheckpoint() {
				got = append(got, r.Event.ResponseStatus.Message)
			}
			return nil
		})
	}
	if len(got) != len(tricky) {
		t.Fatalf("read %d records, want %d", len(got), len(tricky))
	}
	for i, s := range tricky {
		if want := string([]rune(s)); got[i] != want {
			t.Errorf("record %d: message %q, want %q", i, got[i], want)
		}
	}
}

// TestMicroTimeMatchesLayout checks the timestamp writer against
// time.AppendFormat, in and out of the four-digit years.
func TestMicroTimeMatchesLayout(t *testing.T) {
	zones := []*time.Location{time.UTC, time.FixedZone("east", 5*3600+1800), time.FixedZone("west", -8*3600)}
	times := []time.Time{
		time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC),
		time.Date(2026, 12, 31, 23, 59, 59, 999999999, time.UTC),
		time.Date(1, 1, 1, 0, 0, 0, 1000, time.UTC),
		time.Date(9999, 12, 31, 23, 59, 59, 999999000, time.UTC),
		time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC),
		time.Date(-1, 6, 15, 8, 30, 0, 0, time.UTC),
		time.Date(2000, 2, 29, 1, 2, 3, 4567, time.UTC),
		time.Unix(0, 0),
	}
	for _, tt := range times {
		for _, z := range zones {
			mt := MicroTime{tt.In(z)}
			w := append([]byte{'"'}, tt.UTC().AppendFormat(nil, microLayout)...)
			w = append(w, '"')
			if got := mt.appendJSON(nil); !bytes.Equal(got, w) {
				t.Errorf("%v: got %s, want %s", mt.Time, got, w)
			}
		}
	}
	if got := (MicroTime{}).appendJSON(nil); string(got) != "null" {
		t.Errorf("zero time: got %s, want null", got)
	}
}

// TestEncodedUserMatchesJSON writes the tricky events with their user
// encoded beforehand (Event.SetUser): the bytes are still those of
// encoding/json, and an event whose User was assigned after SetUser is
// written with the new User, never the stale block.
func TestEncodedUserMatchesJSON(t *testing.T) {
	for i, ev := range trickyEvents() {
		u := EncodeUser(ev.User)
		if want, _ := json.Marshal(ev.User); !bytes.Equal(u.json, want) {
			t.Errorf("event %d: user block\n got %s\nwant %s", i, u.json, want)
		}
		ev.SetUser(u)
		want, err := json.Marshal(ev)
		if err != nil {
			t.Fatal(err)
		}
		if got, _ := appendEvent(nil, ev); !bytes.Equal(got, want) {
			t.Errorf("event %d with its user encoded beforehand:\n got %s\nwant %s", i, got, want)
		}
		// Replace the user in every way a field can change.
		for j, nu := range []UserInfo{
			{Username: "someone else", UID: ev.User.UID, Groups: ev.User.Groups, Extra: ev.User.Extra},
			{Username: ev.User.Username, UID: "other uid", Groups: ev.User.Groups, Extra: ev.User.Extra},
			{Username: ev.User.Username, UID: ev.User.UID, Groups: append([]string(nil), ev.User.Groups...), Extra: ev.User.Extra},
			{Username: ev.User.Username, UID: ev.User.UID, Groups: ev.User.Groups, Extra: map[string][]string{ExtraPodName: {"p"}}},
			{Username: ev.User.Username, UID: ev.User.UID, Groups: ev.User.Groups},
			{},
		} {
			ev.SetUser(u)
			ev.User = nu
			want, _ := json.Marshal(ev)
			if got, _ := appendEvent(nil, ev); !bytes.Equal(got, want) {
				t.Errorf("event %d, user replaced (%d) after SetUser:\n got %s\nwant %s", i, j, got, want)
			}
		}
	}
}

// TestAppendRecordChainMatchesJSON checks the chain annotations written
// beside an event's own: the bytes are those encoding/json writes once the
// two annotations are set in the map, whatever the map held under their
// keys, and the event's map is left as it was.
func TestAppendRecordChainMatchesJSON(t *testing.T) {
	prev := Link(Genesis(), []byte("previous record"))
	for i, ev := range trickyEvents() {
		for _, seq := range []uint64{1, 7, math.MaxUint64} {
			before := maps.Clone(ev.Annotations)
			got, err := appendRecord(nil, ev, &chainLink{seq: seq, prev: prev})
			if err != nil {
				t.Fatal(err)
			}
			if !maps.Equal(ev.Annotations, before) || (ev.Annotations == nil) != (before == nil) {
				t.Fatalf("event %d: annotations changed to %v", i, ev.Annotations)
			}
			withChain := *ev
			withChain.Annotations = maps.Clone(ev.Annotations)
			if withChain.Annotations == nil {
				withChain.Annotations = map[string]string{}
			}
			withChain.Annotations[AnnotationSeq] = strconv.FormatUint(seq, 10)
			withChain.Annotations[AnnotationPrevHash] = prev.String()
			want, err := json.Marshal(&withChain)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, want) {
				t.Errorf("event %d seq %d:\n got %s\nwant %s", i, seq, got, want)
			}
		}
	}
}
