package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/pipeguard/pipeguard/hack/bench/internal/results"
	"github.com/pipeguard/pipeguard/hack/bench/internal/sysinfo"
)

// The report of testdata holds the machine, every target with its ratio and
// verdict, a row per webhook target with medians and ratios to the floor,
// the agent's rows, and is the same each time it is written.
func TestReportTables(t *testing.T) {
	in, err := readInput("testdata")
	if err != nil {
		t.Fatal(err)
	}
	got := string(report(in, 312*time.Second))
	if again := string(report(in, 312*time.Second)); again != got {
		t.Fatal("two reports of the same input differ")
	}
	for _, want := range []string{
		"| CPU | Test CPU @ 2.50GHz |",
		"| cores | 2 (GOMAXPROCS 2) |",
		"| Go | go1.26.0 linux/amd64 |",
		"| load average before the load runs (1, 5, 15 min) | 0.10 0.20 0.30 |",
		"| date | 2026-01-02T03:04:05Z |",
		"| `make bench` up to this report | 5m12s |",
		// Targets: medians of the per-round ratios, not ratios of medians.
		"| deployed mix: pipeguard's CPU time per review ≤ 1.3× the floor's | 1.20× (median of 3 rounds: 1.20, 1.36, 1.16) | met |",
		"| deployed mix: pipeguard's saturated throughput ≥ 0.8× the floor's | 0.90× (median of 3 rounds: 0.90, 0.71, 0.90) | met |",
		"| rego on every review (pipes mix): pipeguard's CPU time per review ≤ 2.5× the floor's | 2.50× (median of 3 rounds: 2.50, 2.36, 2.53) | met |",
		"| rego on every review (pipes mix): pipeguard's saturated throughput ≥ 0.6× the floor's | 0.45× (median of 3 rounds: 0.45, 0.50, 0.44) | **missed** |",
		"| rego on every review (pipes mix): pipeguard's saturated throughput ≥ 4× OPA Gatekeeper's with the same rule | 3.60× (median of 3 rounds: 3.60, 4.00, 3.56); Gatekeeper's CPU time per review: 3.60× pipeguard's; with Gatekeeper at GOGC=400, as pipeguard runs: 3.15×, Gatekeeper's CPU time per review 3.20× pipeguard's | **missed** |",
		"| deployed mix: pipeguard's saturated throughput ≥ 4× OPA Gatekeeper's with the same rule | not measured: no round ran both pipeguard and gatekeeper",
		"| pipes mix, every review a decision of its own, so the decision cache is full: pipeguard's peak RSS ≤ 1.2× the floor's | 1.50× (median of 3 rounds: 1.50, 1.49, 1.50) | **missed** |",
		"| 10,000 namespaces and 50 policies: p50 latency ≤ 2.0× the default policy's | 1.11× (median of 3 rounds) | met |",
		"| 10,000 namespaces and 50 policies: peak RSS ≤ 2.0× the default policy's | 1.67× (median of 3 rounds) | met |",
		"| end to end through kube-apiserver, pods with hostPath pipe mounts: added p50 ≤ the floor's + 0.2 ms | pipeguard − floor 0.100 ms (median of 3 rounds); added to no admission check: pipeguard 0.600 ms, floor 0.500 ms, ValidatingAdmissionPolicy 0.100 ms, Gatekeeper 1.200 ms | met |",
		"| end to end through kube-apiserver, pods without a hostPath: no cost beyond the floor's (≤ 0.1 ms) | pipeguard − floor 0.050 ms (median of 3 rounds); added to no admission check: pipeguard 0.550 ms, floor 0.500 ms, ValidatingAdmissionPolicy 0.050 ms, Gatekeeper 0.100 ms | met |",
		"| end to end through kube-apiserver, pods mounting a CSI Proxy pipe without an allowance, denied by every check but the floor: added p50 to the answer | added to no admission check (medians of 3 rounds): pipeguard 0.300 ms, floor 0.500 ms, ValidatingAdmissionPolicy -1.000 ms, Gatekeeper 1.000 ms | – |",
		"| end to end through kube-apiserver, pods with ordinary hostPath volumes only: added p50 | not measured | – |",
		"| agent reads (PathExists, 1 client): gated calls/s ≥ 0.87× ungated | 0.62× (median of 20 rounds; in all, 5,000 vs 8,000 calls/s, CPU per call 0.130 vs 0.080 ms) | **missed** |",
		"| agent mutating calls (Mkdir, 1 client): gated p50 at most 0.05 ms above the fsync-only agent's (no gate or audit log; it fsyncs a 1 KB record before each call, in groups) | gated − fsync-only 0.030 ms, gated ÷ fsync-only 1.03× (medians of 20 rounds); in all, p50 gated 1.000, fsync-only 0.970, ungated 0.300 ms | met |",
		"| agent mutating calls (Mkdir, 16 clients): gated p50 at most 1.00× the fsync-only agent's (no gate or audit log; it fsyncs a 1 KB record before each call, in groups) | gated − fsync-only 0.200 ms, gated ÷ fsync-only 1.03× (medians of 20 rounds); in all, p50 gated 7.000, fsync-only 6.800, ungated 3.500 ms | **missed** |",
		"| agent admin policy, repeated inputs: a gate decision ≤ 15 µs | 0.6 µs (`BenchmarkDecide/allow`, the sample policy) | met |",
		// Webhook.
		"5,400 bytes on average",
		"### The deployed mix\n\nAs deployed: pods and Deployments without a host path",
		"| floor | 3 | 100.0 | 1.00× | 8,000 | 1.00× | 0.900 | 1.800 | 40.0 | 0 |",
		"| pipeguard | 3 | 120.0 | 1.20× | 7,200 | 0.90× | 1.000 | 2.000 | 48.0 | 0 |",
		"### The pipes mix\n\nThe reviews with a pipe mount alone",
		"| pipeguard | 3 | 250.0 | 2.50× | 3,600 | 0.45× | 2.000 | 4.000 | 60.0 | 0 |",
		"| gatekeeper-gogc400 | 3 | 800.0 | 8.00× | 1,143 | 0.14× | 7.200 | 14.400 | 100.0 | 0 |",
		"### The denials mix\n\nThe pods and Deployments that must be denied alone",
		"`gatekeeper-gogc400` is the same\nat GOGC=400",
		"## OPA Gatekeeper\n\nThe results hold gatekeeper runs but not what they ran",
		// End to end, with the ValidatingAdmissionPolicy's rule.
		"| pipeguard | 3.600 | 0.600 | 3.050 | 0.550 | – | – | 3.400 | 0.300 |",
		"| gatekeeper | 4.200 | 1.200 | 2.600 | 0.100 | – | – | 4.100 | 1.000 |",
		" denied pipe pods p50 ms | added ms |\n",
		"```cel\nobject.spec.volumes.all(v, !has(v.hostPath))\n```",
		// Agent.
		"with its audit log on ext4",
		"| PathExists | 1 | ungated | 8,000 | 0.100 | 0.400 | 0 | 0.080 | 51.0 |",
		"| Mkdir | 16 | gated + audited | 2,000 | 7.000 | 24.000 | 0 | 0.400 | 54.0 |",
		"| Mkdir | 16 | fsync-only | 2,400 | 6.800 | 20.000 | 0 | 0.300 | 52.0 |",
		"for Mkdir the\ngated (or fsync-only) p50 minus the ungated p50 minus the fsync floor's p50, all of the same round, and judge their\nmedians",
		// Go benchmarks: results, not the noise around them.
		"pkg: github.com/pipeguard/pipeguard/webhook\nBenchmarkReviewDeniedPod",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("report lacks\n%s", want)
		}
	}
	for _, unwanted := range []string{"goarch:", "PASS", "ok  \t", "The machine was busy", "hypervisor", "not settled", "```rego"} {
		if strings.Contains(got, unwanted) {
			t.Errorf("report holds %q", unwanted)
		}
	}
	if t.Failed() {
		t.Logf("report:\n%s", got)
	}
}

// A target missing from the runs is reported as not measured, never as met;
// end to end, pipeguard's hostPath pods and Gatekeeper are left out.
func TestReportSaysWhatWasNotMeasured(t *testing.T) {
	in, err := readInput("testdata")
	if err != nil {
		t.Fatal(err)
	}
	in.Webhook = slices.DeleteFunc(in.Webhook, func(r *Review) bool { return r.Mix == "pipes" && r.Target != "floor" })
	in.Agent = nil
	in.E2E = slices.DeleteFunc(in.E2E, func(r *results.Pods) bool {
		return r.Target == "gatekeeper" || r.Target == "pipeguard" && r.Kind == "hostpath"
	})
	got := string(report(in, 0))
	for _, want := range []string{
		"| rego on every review (pipes mix): pipeguard's CPU time per review ≤ 2.5× the floor's | not measured | – |",
		"| rego on every review (pipes mix): pipeguard's saturated throughput ≥ 4× OPA Gatekeeper's with the same rule | not measured: no round ran both pipeguard and gatekeeper",
		"| agent reads (PathExists, 1 client): gated calls/s ≥ 0.87× ungated | not measured | – |",
		"| agent mutating calls (Mkdir, 1 client): gated p50 at most 0.05 ms above the fsync-only agent's (no gate or audit log; it fsyncs a 1 KB record before each call, in groups) | not measured | – |",
		"| end to end through kube-apiserver, pods with hostPath pipe mounts: added p50 ≤ the floor's + 0.2 ms | not measured | – |",
		"pipeguard 0.550 ms, floor 0.500 ms, ValidatingAdmissionPolicy 0.050 ms, Gatekeeper not measured | met |",
		"(medians of 3 rounds): pipeguard 0.300 ms, floor 0.500 ms, ValidatingAdmissionPolicy -1.000 ms, Gatekeeper not measured | – |",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("report lacks\n%s\n%s", want, got)
		}
	}
}

func TestReportNotesABusyMachine(t *testing.T) {
	in, err := readInput("testdata")
	if err != nil {
		t.Fatal(err)
	}
	in.Machine.LoadAverage = "3.50 3.00 2.00"
	if got := string(report(in, 0)); !strings.Contains(got, "The machine was busy with other work when the load runs started (load average 3.50 on 2 cores)") {
		t.Errorf("report does not note the load:\n%s", got)
	}
}

func TestRun(t *testing.T) {
	out := t.TempDir()
	var stdout, stderr strings.Builder
	if code := run([]string{"--in", "testdata", "--out", out, "--elapsed", "90s"}, &stdout, &stderr); code != 0 {
		t.Fatalf("exit code %d: %s", code, stderr.String())
	}
	if fi, err := os.Stat(filepath.Join(out, "README.md")); err != nil || fi.Size() == 0 {
		t.Errorf("README.md: %v", err)
	}

	stdout.Reset()
	if code := run([]string{"machine"}, &stdout, &stderr); code != 0 {
		t.Fatalf("machine: exit code %d", code)
	}
	var m sysinfo.Machine
	if err := json.Unmarshal([]byte(stdout.String()), &m); err != nil || m.Cores < 1 || m.GoVersion == "" {
		t.Fatalf("machine: %v %+v", err, m)
	}
}

// Bad command lines and bad or missing results are refused rather than
// reported wrongly.
func TestRunRejects(t *testing.T) {
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
		"stray argument":      {[]string{"now"}, 2, `unexpected arguments ["now"]`},
		"negative elapsed":    {[]string{"--elapsed", "-1s"}, 2, "--elapsed -1s is negative"},
		"machine argument":    {[]string{"machine", "x"}, 2, "takes no arguments"},
		"no results":          {[]string{"--in", t.TempDir(), "--out", t.TempDir()}, 1, "machine.json"},
		"run without target":  {[]string{"--in", badInput("webhook.json", `[{"round":1}]`), "--out", t.TempDir()}, 1, "webhook.json: a run without a target"},
		"gatekeeper no rego":  {[]string{"--in", badInput("gatekeeper.json", `{"version": "v3.23.1", "kinds": ["Pod"]}`), "--out", t.TempDir()}, 1, "gatekeeper.json: Gatekeeper's version, its rule's rego and the kinds it matches are all required"},
		"gatekeeper no kinds": {[]string{"--in", badInput("gatekeeper.json", `{"version": "v3.23.1", "rego": "package x"}`), "--out", t.TempDir()}, 1, "the kinds it matches are all required"},
		"gatekeeper no JSON":  {[]string{"--in", badInput("gatekeeper.json", `{"version":`), "--out", t.TempDir()}, 1, "gatekeeper.json: unexpected end of JSON input"},
	} {
		var stdout, stderr strings.Builder
		if code := run(tc.args, &stdout, &stderr); code != tc.code || !strings.HasPrefix(stderr.String(), "report") {
			t.Errorf("%s: exit code %d, stderr %q; want %d and the reason", name, code, stderr.String(), tc.code)
		}
		if !strings.Contains(stderr.String(), tc.words) {
			t.Errorf("%s: stderr %q does not say %q", name, stderr.String(), tc.words)
		}
	}
}

// withGatekeeper is the input of testdata with gatekeeper runs of the
// reviews/s rps in rounds 0, 1, 2…, described by peer.
func withGatekeeper(t *testing.T, rps []float64, peer *results.GatekeeperPeer) *Input {
	t.Helper()
	in, err := readInput("testdata")
	if err != nil {
		t.Fatal(err)
	}
	for round, v := range rps {
		in.Webhook = append(in.Webhook, &Review{Target: "gatekeeper", Mix: "deployed", Round: round, Workers: 16, Namespaces: 20, Seconds: 5,
			Sent: int(v * 5), ReviewsPerSecond: v, CPUPerReviewMs: 0.9, P50: 10, P99: 30, PeakRSSBytes: 200 << 20})
	}
	in.Gatekeeper = peer
	return in
}

var gatekeeperPeer = &results.GatekeeperPeer{Version: "v3.23.1", Rego: "package pipeguardcsiproxy\n\nviolation[{\"msg\": msg}] {\n\tmsg := \"csi-proxy\"\n}\n",
	Kinds: []string{"Pod", "apps/Deployment"}, Args: []string{"--operation=webhook", "--port=…"}}

// With gatekeeper runs, the Gatekeeper target is judged by the median of
// the per-round ratios of pipeguard's reviews/s to Gatekeeper's, and the
// report shows the rule Gatekeeper decided beside a pointer to pipeguard's.
func TestReportComparesGatekeeper(t *testing.T) {
	// pipeguard's reviews/s in rounds 0, 1, 2: 7,200, 5,000, 8,100.
	got := string(report(withGatekeeper(t, []float64{1800, 1000, 2000}, gatekeeperPeer), 0))
	for _, want := range []string{
		// CPU: 0.9 ms against pipeguard's 0.12, 0.15, 0.11.
		"| deployed mix: pipeguard's saturated throughput ≥ 4× OPA Gatekeeper's with the same rule | 4.05× (median of 3 rounds: 4.00, 5.00, 4.05); Gatekeeper's CPU time per review: 7.50× pipeguard's; with Gatekeeper at GOGC=400, as pipeguard runs: not measured | met |",
		"| gatekeeper | 3 | 900.0 | 9.00× | 1,800 | 0.22× | 10.000 | 30.000 | 200.0 | 0 |",
		"`gatekeeper` is OPA Gatekeeper's own executable",
		"## OPA Gatekeeper\n\n`gatekeeper` runs OPA Gatekeeper v3.23.1",
		"a Constraint matching\nPod, apps/Deployment.\n",
		"```\ngatekeeper --operation=webhook --port=…\n```",
		"`rego/admission.rego`",
		"```rego\npackage pipeguardcsiproxy\n\nviolation[{\"msg\": msg}] {\n\tmsg := \"csi-proxy\"\n}\n```",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("report lacks\n%s", want)
		}
	}
	if t.Failed() {
		t.Logf("report:\n%s", got)
	}

	// Gatekeeper well behind the target is a miss.
	got = string(report(withGatekeeper(t, []float64{3600, 2500, 4050}, gatekeeperPeer), 0))
	if !strings.Contains(got, "| deployed mix: pipeguard's saturated throughput ≥ 4× OPA Gatekeeper's with the same rule | 2.00× (median of 3 rounds: 2.00, 2.00, 2.00)") ||
		!strings.Contains(got, "| **missed** |") {
		t.Errorf("report does not miss the target:\n%s", got)
	}
}

// Without gatekeeper runs the target is not measured, and the rule is not
// shown, even when gatekeeper.json is there; runs without gatekeeper.json
// say that what ran is unknown.
func TestReportGatekeeperMissing(t *testing.T) {
	in := withGatekeeper(t, nil, gatekeeperPeer)
	in.Webhook = slices.DeleteFunc(in.Webhook, func(r *Review) bool { return strings.HasPrefix(r.Target, "gatekeeper") })
	got := string(report(in, 0))
	if !strings.Contains(got, "| rego on every review (pipes mix): pipeguard's saturated throughput ≥ 4× OPA Gatekeeper's with the same rule | not measured: no round ran both pipeguard and gatekeeper") ||
		strings.Contains(got, "## OPA Gatekeeper") {
		t.Errorf("without runs:\n%s", got)
	}
	got = string(report(withGatekeeper(t, []float64{1800, 1000, 2000}, nil), 0))
	if !strings.Contains(got, "4.05× (median of 3 rounds") || !strings.Contains(got, "The results hold gatekeeper runs but not what they ran") {
		t.Errorf("without gatekeeper.json:\n%s", got)
	}
}
