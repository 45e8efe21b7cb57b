package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// TestMain lets the test binary serve as the agent process: measure re-runs
// the executable it is in with the serve subcommand.
func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == serveCommand {
		os.Exit(serveMain(os.Args[2:], os.Stdin, os.Stdout, os.Stderr))
	}
	os.Exit(m.Run())
}

func TestParseFlags(t *testing.T) {
	cfg, err := parseFlags(nil)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(cfg.ops, ",") != "PathExists,Mkdir" || len(cfg.clients) != 2 || cfg.clients[0] != 1 || cfg.clients[1] != 16 {
		t.Fatalf("defaults: ops %v, clients %v; want PathExists,Mkdir with 1 and 16 clients", cfg.ops, cfg.clients)
	}
	if cfg, err := parseFlags([]string{"--dir", "rel"}); err != nil || !filepath.IsAbs(cfg.dir) {
		t.Fatalf("--dir rel: %v, %q; want an absolute path", err, cfg.dir)
	}
	for name, args := range map[string][]string{
		"unknown op":        {"--ops", "PathExists,Rmdir"},
		"no clients":        {"--clients", "0"},
		"clients not a num": {"--clients", "1,x"},
		"zero duration":     {"--duration", "0s"},
		"slice too short":   {"--slice", "1ms"},
		"slice over run":    {"--duration", "1s", "--slice", "2s"},
		"negative warmup":   {"--warmup", "-1s"},
		"stray argument":    {"now"},
		"unknown flag":      {"--rate", "5"},
	} {
		t.Run(name, func(t *testing.T) {
			if _, err := parseFlags(args); err == nil {
				t.Fatal("no error")
			}
			var out, errOut strings.Builder
			if code := run(args, &out, &errOut); code != 2 || !strings.HasPrefix(errOut.String(), "agentload: ") {
				t.Fatalf("exit code %d, stderr %q; want 2 and the reason", code, errOut.String())
			}
		})
	}
}

func TestServeRejectsBadFlags(t *testing.T) {
	for name, args := range map[string][]string{
		"no dir":         {"--gated"},
		"stray argument": {"--dir", t.TempDir(), "now"},
		"unknown flag":   {"--dir", t.TempDir(), "--audit", "x"},
	} {
		t.Run(name, func(t *testing.T) {
			var out, errOut strings.Builder
			if code := serveMain(args, strings.NewReader(""), &out, &errOut); code != 2 || out.Len() > 0 {
				t.Fatalf("exit code %d, stdout %q; want 2 and nothing served", code, out.String())
			}
		})
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
	code := run([]string{"--clients", "1,3", "--duration", "60ms", "--warmup", "20ms", "--slice", "20ms",
		"--dir", dir, "--json", jsonPath}, &out, &errOut)
	if code != 0 {
		t.Fatalf("exit code %d\nstdout:\n%s\nstderr:\n%s", code, out.String(), errOut.String())
	}
	b, err := os.ReadFile(jsonPath)
	if err != nil {
		t.Fatal(err)
	}
	var res Results
	if err := json.Unmarshal(b, &res); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, c := range res.Cases {
		got = append(got, c.Op+"/"+map[int]string{1: "1", 3: "3"}[c.Clients])
		for name, s := range map[string]*Stats{"ungated": c.Ungated, "gated": c.Gated} {
			if s == nil || s.Calls == 0 || s.Errors != 0 || s.CallsPerSecond <= 0 || s.P99 < s.P50 || s.Max < s.P99 {
				t.Errorf("%s x%d %s: %+v", c.Op, c.Clients, name, s)
			}
		}
	}
	if strings.Join(got, " ") != "PathExists/1 PathExists/3 Mkdir/1 Mkdir/3" {
		t.Errorf("cases %v", got)
	}
	if res.AuditFilesystem == "" {
		t.Error("no audit file system")
	}
	if left, _ := os.ReadDir(dir); len(left) != 1 {
		t.Errorf("left behind in --dir: %v", left)
	}
	if !strings.Contains(out.String(), "gated vs ungated:") {
		t.Errorf("no summary in\n%s", out.String())
	}
}
