package audit_test

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"

	"github.com/pipeguard/pipeguard/agent/audit"
	"github.com/pipeguard/pipeguard/agent/audit/review"
)

const mib = 1 << 20

func openLog(t *testing.T, path string) *audit.Log {
	t.Helper()
	l, err := audit.Open(audit.Options{Path: path, Log: logr.Discard()})
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	return l
}

func event(id string) *audit.Event {
	now := audit.MicroTime{Time: time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)}
	return &audit.Event{
		Kind: audit.Kind, APIVersion: audit.APIVersion, Level: audit.LevelRequest, AuditID: id,
		Stage: audit.StageResponseComplete, RequestURI: "/v1.Filesystem/Mkdir", Verb: "Mkdir",
		User:                     audit.UserInfo{Username: "pipeguard:peer:uid:0"},
		ObjectRef:                &audit.ObjectReference{Resource: "filesystem", APIVersion: "v1", Name: "/k/x"},
		RequestReceivedTimestamp: now, StageTimestamp: now,
		Annotations: map[string]string{audit.AnnotationRecord: audit.RecordRequest, audit.AnnotationDecision: audit.DecisionAllow},
	}
}

// lines returns the lines of a file, for tests of small logs.
func lines(t *testing.T, path string) []string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []string
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 64*mib)
	for sc.Scan() {
		out = append(out, sc.Text())
	}
	return out
}

func verify(t *testing.T, path string) *review.Report {
	t.Helper()
	files, err := audit.Files(path)
	if err != nil {
		t.Fatal(err)
	}
	rep, err := review.Verify(review.Source{Paths: files})
	if err != nil {
		t.Fatal(err)
	}
	return rep
}

// TestRecordBoundsEveryField sets every string a caller can put in a record
// to 16 MiB (escaped characters, multi-byte ones and invalid UTF-8 among
// them), with more groups, extra keys and annotations than a record keeps:
// the record's line is at most MaxRecordLine, the chain verifies, the
// record says what was cut, and appending it allocates a bounded amount,
// not a copy of its input.
func TestRecordBoundsEveryField(t *testing.T) {
	huge := strings.Repeat("<é\"\xff\n", 16*mib/6+1)[:16*mib]
	ev := event("huge")
	ev.UserAgent = huge
	ev.User = audit.UserInfo{Username: huge, UID: huge, Groups: make([]string, 10), Extra: map[string][]string{}}
	for i := range ev.User.Groups {
		ev.User.Groups[i] = huge
	}
	for i := range 40 {
		ev.User.Extra[fmt.Sprintf("%02d-%s", i, huge[:mib])] = []string{huge, huge}
		ev.Annotations[fmt.Sprintf("x/%d-%s", i, huge[:mib])] = huge
	}
	ev.ObjectRef.Name = huge
	ev.ResponseStatus = &audit.Status{Status: "Failure", Message: huge, Reason: "PermissionDenied", Code: 403}
	// A denial by a rule of 16 MiB: its authorization reason quotes it.
	audit.SetDecision(ev.Annotations, false, huge)
	ev.Annotations[audit.AnnotationReason] = huge
	ev.RequestObject = map[string]any{"path": huge, "list": []any{huge, map[string]any{huge: huge}}}

	path := filepath.Join(t.TempDir(), "audit.log")
	l := openLog(t, path)
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	if err := l.Append(ev, true); err != nil {
		t.Fatal(err)
	}
	runtime.ReadMemStats(&after)
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if n := after.TotalAlloc - before.TotalAlloc; n > 4*mib {
		t.Errorf("appending the record allocated %d bytes; it must not grow with its 16 MiB strings", n)
	}

	var line string
	for _, s := range lines(t, path) {
		if strings.Contains(s, `"auditID":"huge"`) {
			line = s
		}
	}
	if len(line) == 0 || len(line) > audit.MaxRecordLine {
		t.Fatalf("record line is %d bytes, want 1 to MaxRecordLine (%d)", len(line), audit.MaxRecordLine)
	}
	t.Logf("record of 16 MiB strings: %d bytes on disk (MaxRecordLine %d)", len(line), audit.MaxRecordLine)
	if rep := verify(t, path); !rep.OK() {
		t.Fatalf("verify: %v", rep.Problems)
	}
	var got audit.Event
	if err := json.Unmarshal([]byte(line), &got); err != nil {
		t.Fatal(err)
	}
	cut := got.Annotations[audit.AnnotationCut]
	for _, f := range []string{"userAgent", "objectRef.name", "responseStatus.message", "annotations[pipeguard.io/reason]", "annotations[pipeguard.io/rule]", "annotations[authorization.k8s.io/reason]", "user.username", "user.uid",
		"user.groups", "user.extra[00-<é", "user.extra key 00-", "user.extra: ", "annotations: ", "annotation key x/0-"} {
		if !strings.Contains(cut, f) {
			t.Errorf("%s does not name %q: %q", audit.AnnotationCut, f, cut)
		}
	}
	if got.Annotations[audit.AnnotationTruncated] == "" && got.RequestObject == nil {
		t.Error("request body neither kept nor marked as left out")
	}
	for name, v := range map[string]string{"userAgent": got.UserAgent, "name": got.ObjectRef.Name, "message": got.ResponseStatus.Message, "username": got.User.Username} {
		i := strings.Index(v, audit.CutMarker)
		if i < 0 || !strings.HasSuffix(v, " bytes]") || !strings.HasPrefix(huge, strings.ReplaceAll(v[:i], "\ufffd", "\xff")) && len(v[:i]) == 0 {
			t.Errorf("%s %q… has no cut marker", name, v[:min(len(v), 40)])
		}
		enc, _ := json.Marshal(v)
		if len(enc)-2 > audit.MaxRecordString {
			t.Errorf("%s encodes to %d bytes, more than MaxRecordString", name, len(enc)-2)
		}
	}
	if n := len(got.User.Groups); n > audit.MaxRecordUserValues {
		t.Errorf("%d groups kept", n)
	}
	if n := len(got.Annotations); n > audit.MaxRecordAnnotations+3 {
		t.Errorf("%d annotations kept", n)
	}
	// The decision survives the bounds: its annotations sort before the
	// ones left out.
	if d, r := got.Annotations[audit.AnnotationAuthorizationDecision], got.Annotations[audit.AnnotationAuthorizationReason]; d != audit.AuthorizationForbid ||
		!strings.HasPrefix(r, "pipeguard-agent: denied by rule <") || !strings.Contains(r, audit.CutMarker) {
		t.Errorf("authorization annotations %q, %q…; want forbid and the cut reason", d, r[:min(len(r), 60)])
	}
	if d := got.Annotations[audit.AnnotationDecision]; d != audit.DecisionDeny {
		t.Errorf("%s %q, want deny", audit.AnnotationDecision, d)
	}
}
