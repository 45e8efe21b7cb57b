package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/pipeguard/pipeguard/hack/bench/internal/results"
)

// TestMain lets the test binary serve as the agent process: measure re-runs
// the executable it is in with the serve subcommand.
func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == serveCommand {
		os.Exit(serveMain(os.Args[2:], os.Stdin, os.Stdout, os.Stderr))
	}
	os.Exit(m.Run())
}

// Bad command lines are refused with exit code 2 and the reason, by the
// tool and by its agent processes, which then serve nothing.
func TestRejectsBadFlags(t *testing.T) {
	if cfg, err := parseFlags([]string{"--dir", "rel"}); err != nil || !filepath.IsAbs(cfg.dir) {
		t.Fatalf("--dir rel: %v, %+v; want an absolute path", err, cfg)
	}
	for _, args := range [][]string{{"--duration", "0s"}, {"--warmup", "-1s"}, {"now"}, {"--clients", "5"}} {
		var out, errOut strings.Builder
		if code := run(args, &out, &errOut); code != 2 || !strings.HasPrefix(errOut.String(), "agentload: ") {
			t.Errorf("%q: exit code %d, stderr %q; want 2 and the reason", args, code, errOut.String())
		}
	}
	for _, args := range [][]string{{"--dir", t.TempDir(), "--agent", "fast"}, {"--dir", t.TempDir(), "now"}, {"--dir", t.TempDir(), "--audit", "x"}} {
		var out, errOut strings.Builder
		if code := serveMain(args, strings.NewReader(""), &out, &errOut); code != 2 || out.Len() > 0 {
			t.Errorf("serve %q: exit code %d, stdout %q; want 2 and nothing served", args, code, out.String())
		}
	}
}

// A short run over real agent processes answers every call on both agents
// and writes one case per op and client count, the gated agent's audit log
// on the file system of --dir, and cleans up after itself. Timing is not
// asserted.
func TestRunMeasuresBothAgents(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("the agent listens on named pipes on Windows")
	}
	dir := t.TempDir()
	jsonPath := filepath.Join(dir, "agent.json")
	var out, errOut strings.Builder
	if code := run([]string{"--duration", "60ms", "--warmup", "20ms", "--dir", dir, "--json", jsonPath}, &out, &errOut); code != 0 {
		t.Fatalf("exit code %d\nstdout:\n%s\nstderr:\n%s", code, out.String(), errOut.String())
	}
	b, err := os.ReadFile(jsonPath)
	if err != nil {
		t.Fatal(err)
	}
	var res results.AgentResults
	if err := json.Unmarshal(b, &res); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, c := range res.Cases {
		got = append(got, c.Op+"/"+map[int]string{1: "1", 16: "16"}[c.Clients])
		for name, s := range map[string]*results.AgentStats{"ungated": c.Ungated, "gated": c.Gated} {
			if s == nil || s.Calls == 0 || s.Errors != 0 || s.CallsPerSecond <= 0 || s.P99 < s.P50 || s.PeakRSSBytes < 0 {
				t.Errorf("%s x%d %s: %+v", c.Op, c.Clients, name, s)
			}
		}
		if c.Rounds < 1 || c.Ratio <= 0 {
			t.Errorf("%s x%d: %d rounds, median ratio %v", c.Op, c.Clients, c.Rounds, c.Ratio)
		}
		if mut := c.Op == OpMkdir; mut != (c.FsyncOnlyRatio > 0) || mut != (c.FsyncOnly != nil && c.FsyncOnly.Calls > 0 && c.FsyncOnly.Errors == 0) {
			t.Errorf("%s x%d: gated ÷ fsync-only %v, fsync-only agent %+v; want both for Mkdir alone", c.Op, c.Clients, c.FsyncOnlyRatio, c.FsyncOnly)
		}
	}
	if strings.Join(got, " ") != "PathExists/1 PathExists/16 Mkdir/1 Mkdir/16" {
		t.Errorf("cases %v", got)
	}
	if res.AuditFilesystem == "" {
		t.Error("no audit file system")
	}
	if left, _ := os.ReadDir(dir); len(left) != 1 {
		t.Errorf("left behind in --dir: %v", left)
	}
	if !strings.Contains(out.String(), "rounds)") || !strings.Contains(out.String(), "   fsync-only p50 ") {
		t.Errorf("no summary in\n%s", out.String())
	}
}
