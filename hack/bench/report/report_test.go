package main

import (
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/pipeguard/pipeguard/hack/bench/internal/results"
	"github.com/pipeguard/pipeguard/hack/bench/internal/sysinfo"
)

// update rewrites the golden reports: go test ./hack/bench/report -update.
var update = flag.Bool("update", false, "rewrite testdata/*.golden.md from the report")

// golden compares a report with testdata/name.golden.md, word for word.
func golden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name+".golden.md")
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if got != string(want) {
		t.Errorf("the report differs from %s (go test -update rewrites it; read the difference first):\n%s", path, got)
	}
}

// The report of testdata (testdata/report.golden.md) holds the machine,
// every target with the median of its per-round ratios (not the ratio of
// medians) and its verdict, a table per mix with CPU time per review
// first, the end-to-end table with every check and kind of pod, the
// agent's rows and the Go benchmarks without the noise around them, and is
// the same each time it is written.
func TestReportTables(t *testing.T) {
	in := testInput(t)
	got := string(report(in, 312*time.Second))
	if again := string(report(in, 312*time.Second)); again != got {
		t.Fatal("two reports of the same input differ")
	}
	golden(t, "report", got)
	for _, unwanted := range []string{"goarch:", "PASS", "ok  \t", "The machine was busy", "hypervisor", "not settled", "```rego"} {
		if strings.Contains(got, unwanted) {
			t.Errorf("report holds %q", unwanted)
		}
	}
}

// A target missing from the runs is reported as not measured, never as met
// (testdata/not-measured.golden.md): the pipes mix without pipeguard and
// Gatekeeper, no agent, end to end without Gatekeeper and pipeguard's
// hostPath pods; a busy machine is noted.
func TestReportSaysWhatWasNotMeasured(t *testing.T) {
	in := testInput(t)
	in.Machine.LoadAverage = "3.50 3.00 2.00"
	in.Webhook = slices.DeleteFunc(in.Webhook, func(r *Review) bool { return r.Mix == "pipes" && r.Target != "floor" })
	in.Agent = nil
	in.E2E = slices.DeleteFunc(in.E2E, func(r *results.Pods) bool {
		return r.Target == "gatekeeper" || r.Target == "pipeguard" && r.Kind == "hostpath"
	})
	got := string(report(in, 0))
	golden(t, "not-measured", got)
	for _, row := range []string{"rego on every review (pipes mix): pipeguard's CPU time per review ≤ 3.3× the floor's", "agent reads (PathExists, 1 client; each record written before the answer): gated calls/s ≥ 0.85× ungated"} {
		if !strings.Contains(got, "| "+row+" | not measured | – |") {
			t.Errorf("%q is not reported as not measured", row)
		}
	}
}

// Agent results without the fsync-only agent leave the Mkdir targets
// unjudged rather than met.
func TestReportAgentWithoutFsyncOnly(t *testing.T) {
	in := testInput(t)
	for _, c := range in.Agent.Cases {
		c.FsyncOnly = nil
	}
	if got := string(report(in, 0)); !strings.Contains(got, "by the same audit log writer) | not measured: no fsync-only agent in the results | – |") {
		t.Errorf("report:\n%s", got)
	}
}

// A good command line writes the report and says where; bad command lines
// and bad or missing results are refused rather than reported wrongly.
func TestRun(t *testing.T) {
	out := t.TempDir()
	badInput := func(file, content string) string {
		dir := t.TempDir()
		for _, f := range []string{"machine.json", "webhook.json"} {
			b, _ := os.ReadFile(filepath.Join("testdata", f))
			os.WriteFile(filepath.Join(dir, f), b, 0o644)
		}
		os.WriteFile(filepath.Join(dir, file), []byte(content), 0o644)
		return dir
	}
	for name, tc := range map[string]struct {
		args  []string
		code  int
		words string
	}{
		"report":              {[]string{"--in", "testdata", "--out", out, "--elapsed", "90s"}, 0, "wrote " + filepath.Join(out, "README.md") + "\n"},
		"stray argument":      {[]string{"now"}, 2, `report: unexpected arguments ["now"]`},
		"negative elapsed":    {[]string{"--elapsed", "-1s"}, 2, "report: --elapsed -1s is negative"},
		"machine argument":    {[]string{"machine", "x"}, 2, "report machine: takes no arguments"},
		"no results":          {[]string{"--in", t.TempDir(), "--out", t.TempDir()}, 1, "machine.json: no such file or directory"},
		"run without target":  {[]string{"--in", badInput("webhook.json", `[{"round":1}]`), "--out", t.TempDir()}, 1, "report: webhook.json: a run without a target"},
		"gatekeeper no rego":  {[]string{"--in", badInput("gatekeeper.json", `{"version": "v3.23.1", "kinds": ["Pod"]}`), "--out", t.TempDir()}, 1, "report: gatekeeper.json: Gatekeeper's version, its rule's rego and the kinds it matches are all required"},
		"gatekeeper no kinds": {[]string{"--in", badInput("gatekeeper.json", `{"version": "v3.23.1", "rego": "package x"}`), "--out", t.TempDir()}, 1, "the kinds it matches are all required"},
		"gatekeeper no JSON":  {[]string{"--in", badInput("gatekeeper.json", `{"version":`), "--out", t.TempDir()}, 1, "gatekeeper.json: unexpected end of JSON input"},
	} {
		var stdout, stderr strings.Builder
		if code := run(tc.args, &stdout, &stderr); code != tc.code || !strings.Contains(stdout.String()+stderr.String(), tc.words) {
			t.Errorf("%s: exit code %d, stdout %q, stderr %q; want %d and %q", name, code, stdout.String(), stderr.String(), tc.code, tc.words)
		}
	}
	if fi, err := os.Stat(filepath.Join(out, "README.md")); err != nil || fi.Size() == 0 {
		t.Errorf("README.md: %v", err)
	}
	var stdout, stderr strings.Builder
	var m sysinfo.Machine
	if code := run([]string{"machine"}, &stdout, &stderr); code != 0 || json.Unmarshal([]byte(stdout.String()), &m) != nil || m.Cores < 1 || m.GoVersion == "" {
		t.Fatalf("machine: exit code %d, %q", code, stdout.String())
	}
}

// With gatekeeper runs, the Gatekeeper target is judged by the median of
// the per-round ratios of pipeguard's reviews/s to Gatekeeper's (pipeguard's
// in rounds 0, 1, 2: 7,200, 5,000, 8,100 reviews/s, 0.12, 0.15, 0.11 ms of
// CPU), and the report shows the rule Gatekeeper decided. Without gatekeeper
// runs the target is not measured and no rule is shown, even with
// gatekeeper.json; runs without gatekeeper.json say what ran is unknown.
func TestReportComparesGatekeeper(t *testing.T) {
	peer := &results.GatekeeperPeer{Version: "v3.23.1", Rego: "package pipeguardcsiproxy\n\nviolation[{\"msg\": msg}] {\n\tmsg := \"csi-proxy\"\n}\n",
		Kinds: []string{"Pod", "apps/Deployment"}, Args: []string{"--operation=webhook", "--port=…"}}
	const row = "| deployed mix: pipeguard's saturated throughput ≥ 4× OPA Gatekeeper's with the same rule, at Gatekeeper's own GOGC | "
	for name, tc := range map[string]struct {
		rps    []float64
		peer   *results.GatekeeperPeer
		want   []string
		noRule bool
	}{
		"met": {[]float64{1800, 1000, 2000}, peer, []string{
			row + "4.05× (median of 3 rounds: 4.00, 5.00, 4.05); Gatekeeper's CPU time per review: 7.50× pipeguard's; with Gatekeeper at GOGC=400, as pipeguard runs: not measured | met |",
			"| gatekeeper | 3 | 900.0 | 9.00× | 1,800 | 0.22× | 10.000 | 30.000 | 200.0 | 0 |",
			"`gatekeeper` is OPA Gatekeeper deciding the same rule",
			"## OPA Gatekeeper\n\nOPA Gatekeeper v3.23.1, run as [the Gatekeeper peer](method.md#the-gatekeeper-peer) says, with a Constraint matching\nPod, apps/Deployment, this command line\n\n```\ngatekeeper --operation=webhook --port=…\n```\n\nand pipeguard's default rule (`rego/admission.rego` and `policy/defaults.go`) as this ConstraintTemplate's rego:",
			"```rego\npackage pipeguardcsiproxy\n\nviolation[{\"msg\": msg}] {\n\tmsg := \"csi-proxy\"\n}\n```",
		}, false},
		"missed":             {[]float64{3600, 2500, 4050}, peer, []string{row + "2.00× (median of 3 rounds: 2.00, 2.00, 2.00); Gatekeeper's CPU time per review: 7.50× pipeguard's; with Gatekeeper at GOGC=400, as pipeguard runs: not measured | **missed** |"}, false},
		"no runs":            {nil, peer, []string{"| rego on every review (pipes mix): pipeguard's saturated throughput ≥ 3× OPA Gatekeeper's with the same rule, at Gatekeeper's own GOGC | not measured: no round ran both pipeguard and gatekeeper"}, true},
		"no gatekeeper.json": {[]float64{1800, 1000, 2000}, nil, []string{row + "4.05× (median of 3 rounds", "## OPA Gatekeeper\n\nThe results hold gatekeeper runs but not what they ran"}, false},
	} {
		in := testInput(t)
		in.Webhook = slices.DeleteFunc(in.Webhook, func(r *Review) bool { return strings.HasPrefix(r.Target, "gatekeeper") })
		for round, v := range tc.rps {
			in.Webhook = append(in.Webhook, &Review{Target: "gatekeeper", Mix: "deployed", Round: round, Workers: 16, Namespaces: 20, Seconds: 5,
				Sent: int(v * 5), ReviewsPerSecond: v, CPUPerReviewMs: 0.9, P50: 10, P99: 30, PeakRSSBytes: 200 << 20})
		}
		in.Gatekeeper = tc.peer
		got := string(report(in, 0))
		for _, want := range tc.want {
			if !strings.Contains(got, want) {
				t.Errorf("%s: report lacks\n%s", name, want)
			}
		}
		if section := strings.Contains(got, "## OPA Gatekeeper"); section == tc.noRule {
			t.Errorf("%s: a Gatekeeper section: %v, want %v", name, section, !tc.noRule)
		}
	}
}

// testInput is the input of testdata.
func testInput(t *testing.T) *Input {
	t.Helper()
	in, err := readInput("testdata")
	if err != nil {
		t.Fatal(err)
	}
	return in
}
