package review

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/pipeguard/pipeguard/agent/audit"
)

// TestFindingsNameTheAgentsOptions checks that a finding about pruned
// files names audit.Options.MaxBackups as the library's callers set it,
// and the name a command gives that option when it shows the finding.
func TestFindingsNameTheAgentsOptions(t *testing.T) {
	flags := func(key string) (string, bool) {
		if key == audit.OptionMaxBackups {
			return "--audit-log-maxbackup", true
		}
		return "", false
	}
	path := filepath.Join(t.TempDir(), "audit.log")
	clock := time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)
	l := openLog(t, audit.Options{Path: path, MaxSize: 2048, MaxBackups: 2, Now: func() time.Time { clock = clock.Add(time.Second); return clock }})
	write(t, l, 0, 60)
	l.Close()

	rep := verify(t, path)
	var pruned Finding
	for _, n := range rep.Notices {
		if strings.Contains(n.Msg, "prune checkpoints match") {
			pruned = n
		}
	}
	if !strings.HasSuffix(pruned.Msg, " were in files the agent removed under Options.MaxBackups; their prune checkpoints match") {
		t.Fatalf("notices %v", rep.Notices)
	}
	if got := pruned.Named(flags).Msg; got != strings.Replace(pruned.Msg, "Options.MaxBackups", "--audit-log-maxbackup", 1) {
		t.Fatalf("named: %q", got)
	}
	if got := pruned.Named(nil); got != pruned {
		t.Fatalf("named without a namer: %+v", got)
	}

	backups := mustFiles(t, path)
	if err := os.Remove(backups[0]); err != nil {
		t.Fatal(err)
	}
	rep = verify(t, path)
	want := "so earlier files were deleted by something other than the agent's Options.MaxBackups"
	if rep.OK() || !strings.HasSuffix(rep.Problems[0].Msg, want) ||
		!strings.HasSuffix(rep.Problems[0].Named(flags).Msg, "something other than the agent's --audit-log-maxbackup") {
		t.Fatalf("after deleting the oldest file: %v", rep.Problems)
	}
	if n := (Finding{Where: "x", Msg: "holds Options.MaxBackups"}).Named(flags); n.Msg != "holds Options.MaxBackups" {
		t.Fatalf("a finding naming no option was renamed: %q", n.Msg)
	}
}
