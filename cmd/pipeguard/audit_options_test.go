package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"

	"github.com/pipeguard/pipeguard/agent/audit"
)

// prunedLog writes a log whose oldest files the agent pruned under
// --audit-log-maxbackup, and returns its path and its rotated files.
func prunedLog(t *testing.T) (string, []string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "audit.log")
	clock := t0
	l, err := audit.Open(audit.Options{Path: path, MaxSize: 2048, MaxBackups: 2, Log: logr.Discard(), Now: func() time.Time { clock = clock.Add(time.Second); return clock }})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 30 {
		if err := l.Append(event("p", i, audit.StageResponseComplete, csiNode, "filesystem", "Mkdir", "allow", "", "OK", ""), true); err != nil {
			t.Fatal(err)
		}
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	backups, err := audit.Backups(path)
	if err != nil || len(backups) != 2 {
		t.Fatalf("backups %v, %v", backups, err)
	}
	return path, backups
}

// TestAuditMessagesNameAgentFlags checks that pipeguard names the agent's
// options by the pipeguard-agent flags that set them, in errors and in
// findings, in every output, and leaves what the user gave as it was.
func TestAuditMessagesNameAgentFlags(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "Options.Path", "audit.log")
	cases := map[string]struct {
		args func(t *testing.T) []string
		code int
		want string
	}{
		"no log at a path named like an option": {
			args: func(*testing.T) []string { return []string{"audit", "verify", missing} },
			code: 2,
			want: "no audit log at " + missing + " and no rotated files beside it: give the --audit-log-path of the agent, or a directory of audit files",
		},
		"pruned files": {
			args: func(t *testing.T) []string { p, _ := prunedLog(t); return []string{"audit", "verify", p} },
			want: "were in files the agent removed under --audit-log-maxbackup; their prune checkpoints match\n",
		},
		"pruned files, as JSON": {
			args: func(t *testing.T) []string { p, _ := prunedLog(t); return []string{"audit", "verify", p, "-o", "json"} },
			want: `were in files the agent removed under --audit-log-maxbackup; their prune checkpoints match"`,
		},
		"a file deleted, not pruned": {
			args: func(t *testing.T) []string {
				p, backups := prunedLog(t)
				if err := os.Remove(backups[0]); err != nil {
					t.Fatal(err)
				}
				return []string{"audit", "verify", p}
			},
			code: 1,
			want: "so earlier files were deleted by something other than the agent's --audit-log-maxbackup\n",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			code, out, errOut := runCLI(t, "", tc.args(t)...)
			if code != tc.code || !strings.Contains(out+errOut, tc.want) || strings.Contains(out+errOut, "Options.MaxBackups") {
				t.Fatalf("exit %d (want %d)\nstdout %s\nstderr %s\nwant %q", code, tc.code, out, errOut, tc.want)
			}
		})
	}
}

// TestVerifyCountsWhatItDoesNotList: a file that is no audit log gets its
// first 50 problems listed and a count of the others, in the table and in
// JSON, and exit 1.
func TestVerifyCountsWhatItDoesNotList(t *testing.T) {
	var b strings.Builder
	for i := range 120 {
		fmt.Fprintf(&b, "not a record %d\n", i)
	}
	path := filepath.Join(t.TempDir(), "notes.txt")
	if err := os.WriteFile(path, []byte(b.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	code, out, _ := runCLI(t, "", "audit", "verify", path)
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	if code != exitDenied || len(lines) != 52 || lines[0] != "notice: "+path+": holds no complete record" ||
		!strings.HasPrefix(lines[1], "FAIL: "+path+":1: line is not a valid audit record: ") ||
		lines[51] != "… and 71 more problems (only the first 50 are listed)" {
		t.Fatalf("exit %d, %d lines, the last %q:\n%s", code, len(lines), lines[len(lines)-1], out)
	}
	code, out, _ = runCLI(t, "", "audit", "verify", path, "-o", "json")
	var v struct {
		Problems     []json.RawMessage `json:"problems"`
		MoreProblems int               `json:"moreProblems"`
	}
	if err := json.Unmarshal([]byte(out), &v); err != nil || code != exitDenied || len(v.Problems) != 50 || v.MoreProblems != 71 {
		t.Fatalf("-o json: exit %d, %d problems, %d more (%v):\n%s", code, len(v.Problems), v.MoreProblems, err, out)
	}
}
