package review

import (
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"

	"github.com/pipeguard/pipeguard/agent/audit"
)

// request is the record of one allowed or denied request.
func request(i int, decision string) *audit.Event {
	t := time.Date(2025, 3, 1, 12, 0, i%60, 0, time.UTC)
	return &audit.Event{
		Kind: audit.Kind, APIVersion: audit.APIVersion, Level: audit.LevelMetadata, AuditID: fmt.Sprintf("id-%d", i),
		Stage: audit.StageResponseComplete, RequestURI: "/v1.Filesystem/Mkdir", Verb: "Mkdir",
		User:                     audit.UserInfo{Username: "pipeguard:peer:uid:0", Extra: map[string][]string{audit.ExtraPID: {"42"}}},
		ObjectRef:                &audit.ObjectReference{Resource: "filesystem", APIVersion: "v1", Name: fmt.Sprintf("/k/%d", i)},
		RequestReceivedTimestamp: audit.MicroTime{Time: t}, StageTimestamp: audit.MicroTime{Time: t},
		Annotations: map[string]string{audit.AnnotationRecord: audit.RecordRequest, audit.AnnotationDecision: decision},
	}
}

func openLog(t *testing.T, o audit.Options) *audit.Log {
	t.Helper()
	o.Log = logr.Discard()
	l, err := audit.Open(o)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	return l
}

// write appends requests from to from+n-1, every other one durably.
func write(t *testing.T, l *audit.Log, from, n int) {
	t.Helper()
	for i := from; i < from+n; i++ {
		if err := l.Append(request(i, audit.DecisionAllow), i%2 == 0); err != nil {
			t.Fatalf("Append %d: %v", i, err)
		}
	}
}

// verify verifies the log at path and its rotated files, without an
// anchor.
func verify(t *testing.T, path string) *Report {
	t.Helper()
	rep, err := Verify(Source{Paths: mustFiles(t, path)})
	if err != nil {
		t.Fatal(err)
	}
	return rep
}

func mustFiles(t *testing.T, path string) []string {
	t.Helper()
	f, err := audit.Files(path)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

func readLines(t *testing.T, path string) []string {
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return strings.SplitAfter(string(b), "\n")
}

func writeLines(t *testing.T, path string, lines []string) {
	if err := os.WriteFile(path, []byte(strings.Join(lines, "")), 0o600); err != nil {
		t.Fatal(err)
	}
}

// editLine replaces line n (from 1); an empty result deletes it.
func editLine(t *testing.T, path string, n int, f func(string) string) {
	lines := readLines(t, path)
	s := f(strings.TrimSuffix(lines[n-1], "\n"))
	if s == "" {
		lines = append(lines[:n-1], lines[n:]...)
	} else {
		lines[n-1] = s + "\n"
	}
	writeLines(t, path, lines)
}
