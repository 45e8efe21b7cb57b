package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"

	"github.com/pipeguard/pipeguard/agent/audit"
)

// TestAuditVerifyAfterOddLastLine: `pipeguard audit verify` on a log whose
// agent restarted after a last line that is not a record exits 1, names
// the line and says what the agent did; after a huge last record (as an
// agent without record bounds wrote it) the chain is intact.
func TestAuditVerifyAfterOddLastLine(t *testing.T) {
	cases := map[string]struct {
		last func(t *testing.T, path string) []byte
		code int
		want []string
	}{
		"edited": {
			last: func(*testing.T, string) []byte { return []byte("this line was edited by hand") },
			code: 1,
			want: []string{"FAIL: ", "line is not a valid audit record",
				"when the agent started it found 29 bytes at the end of audit-", "that are not valid audit records",
				"it left them there and continued the chain from the last valid record before them"},
		},
		"huge record": {
			last: func(t *testing.T, path string) []byte {
				var seq uint64
				var h audit.Hash
				audit.ScanFile(path, func(r audit.Record) error {
					seq, h = r.Seq, audit.Link(r.Prev, r.Raw)
					return nil
				})
				e := event("old", 9, audit.StageResponseComplete, shell, "filesystem", "PathExists", "allow", "", "OK", "")
				e.UserAgent = strings.Repeat("U", 5<<20)
				e.Annotations[audit.AnnotationSeq] = strconv.FormatUint(seq+1, 10)
				e.Annotations[audit.AnnotationPrevHash] = h.String()
				b, _ := json.Marshal(e)
				return b
			},
			want: []string{"OK: audit chain intact: "},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			path := writeLog(t, 0)
			f, _ := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
			f.Write(append(tc.last(t, path), '\n'))
			f.Close()
			// The agent restarts.
			l, err := audit.Open(audit.Options{Path: path, Log: logr.Discard(), Now: func() time.Time { return t0.Add(time.Hour) }})
			if err != nil {
				t.Fatalf("the agent does not start: %v", err)
			}
			l.Close()
			code, out, errOut := runCLI(t, "", "audit", "verify", filepath.Dir(path))
			for _, w := range tc.want {
				if !strings.Contains(out+errOut, w) {
					t.Errorf("output lacks %q", w)
				}
			}
			if code != tc.code || t.Failed() {
				t.Fatalf("exit %d (want %d)\nstdout %s\nstderr %s", code, tc.code, out, errOut)
			}
		})
	}
}
