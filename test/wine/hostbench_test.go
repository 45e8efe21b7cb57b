//go:build wine && linux

package wine

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// hostbenchMode is what hostbench's summary says of one mode.
type hostbenchMode struct {
	Calls                int      `json:"calls"`
	ProcessStarts        int      `json:"processStarts"`
	WarmupProcessStarts  int      `json:"warmupProcessStarts"`
	WarmupProcesses      []string `json:"warmupProcesses"`
	MedianCallsPerSecond float64  `json:"medianCallsPerSecond"`
	MedianCPUMsPerCall   float64  `json:"medianCpuMsPerCall"`
	WarmupSeconds        float64  `json:"warmupSeconds"`
}

// hostbenchSummary is the last line of test/wine/cmd/hostbench's output.
type hostbenchSummary struct {
	Kind           string        `json:"kind"`
	Rounds         int           `json:"rounds"`
	CallsPerRound  int           `json:"callsPerRound"`
	Query          hostbenchMode `json:"query"`
	Method         hostbenchMode `json:"method"`
	ProcessStarts  int           `json:"processStarts"`
	PreviousWorker struct {
		Source                string `json:"source"`
		WorkerCallsPerSecond  string `json:"workerCallsPerSecond"`
		ProcessCallsPerSecond string `json:"processCallsPerSecond"`
	} `json:"previousWorker"`
	Wine       string   `json:"wine"`
	Verified   bool     `json:"verified"`
	Mismatches []string `json:"mismatches"`
	Note       string   `json:"note"`
}

// parseHostbench reads hostbench's output: one JSON object per line, a
// round line for each round of each mode, then the summary. It fails on
// anything else, and on a summary that is unverified, holds no rate or
// counts a process, so that a broken run never reports a rate.
func parseHostbench(out []byte) (rounds []string, s hostbenchSummary, err error) {
	var summaries int
	for i, line := range strings.Split(strings.TrimRight(string(out), "\n"), "\n") {
		var kind struct{ Kind string }
		if err := json.Unmarshal([]byte(line), &kind); err != nil {
			return rounds, s, fmt.Errorf("hostbench output line %d is not a JSON object (%v): %q", i+1, err, line)
		}
		switch {
		case kind.Kind == "round" && summaries == 0:
			rounds = append(rounds, line)
		case kind.Kind == "summary" && summaries == 0:
			summaries++
			if err := json.Unmarshal([]byte(line), &s); err != nil {
				return rounds, s, fmt.Errorf("hostbench's summary does not parse (%v): %q", err, line)
			}
		default:
			return rounds, s, fmt.Errorf("hostbench output line %d is a %q line where a round or the summary belongs: %q", i+1, kind.Kind, line)
		}
	}
	switch {
	case summaries == 0:
		return rounds, s, errors.New("hostbench printed no summary: the run ended early")
	case len(rounds) != 2*s.Rounds || s.Rounds == 0:
		return rounds, s, fmt.Errorf("hostbench printed %d round lines for %d rounds of 2 modes", len(rounds), s.Rounds)
	case !s.Verified:
		return rounds, s, fmt.Errorf("hostbench's counts do not match its calls: %v", s.Mismatches)
	case s.Query.ProcessStarts != 0 || s.Method.ProcessStarts != 0:
		return rounds, s, fmt.Errorf("hostbench's summary counts %d processes started in its rounds, want none", s.Query.ProcessStarts+s.Method.ProcessStarts)
	}
	for name, v := range map[string]float64{"query.medianCallsPerSecond": s.Query.MedianCallsPerSecond, "method.medianCallsPerSecond": s.Method.MedianCallsPerSecond} {
		if !(v > 0) || math.IsInf(v, 0) {
			return rounds, s, fmt.Errorf("hostbench's summary has %s %v, want a positive rate", name, v)
		}
	}
	return rounds, s, nil
}

func TestParseHostbenchRefusesABrokenRun(t *testing.T) {
	round := func(n int, mode string) string {
		return fmt.Sprintf(`{"kind":"round","round":%d,"mode":%q,"calls":20,"callsPerSecond":10}`, n, mode)
	}
	rounds := round(1, "query") + "\n" + round(1, "method") + "\n"
	summary := `{"kind":"summary","rounds":1,"callsPerRound":20,"query":{"calls":21,"processStarts":0,"medianCallsPerSecond":900,"medianCpuMsPerCall":0.5},` +
		`"method":{"calls":21,"processStarts":0,"medianCallsPerSecond":400},"processStarts":0,` +
		`"previousWorker":{"workerCallsPerSecond":"about 1,300 to 1,500"},"verified":true,"note":"n"}`
	r, s, err := parseHostbench([]byte(rounds + summary + "\n"))
	if err != nil || len(r) != 2 || s.Query.MedianCallsPerSecond != 900 || s.Method.MedianCallsPerSecond != 400 || s.Query.MedianCPUMsPerCall != 0.5 ||
		s.PreviousWorker.WorkerCallsPerSecond != "about 1,300 to 1,500" {
		t.Fatalf("a whole run: %d rounds, %+v, %v", len(r), s, err)
	}
	for name, tc := range map[string]struct {
		out, want string
	}{
		"nothing":           {"", "hostbench output line 1 is not a JSON object"},
		"no summary":        {rounds, "hostbench printed no summary: the run ended early"},
		"a truncated line":  {rounds + summary[:40], "hostbench output line 3 is not a JSON object"},
		"garbage":           {"panic: runtime error\n" + rounds + summary, "hostbench output line 1 is not a JSON object"},
		"two summaries":     {rounds + summary + "\n" + summary, `hostbench output line 4 is a "summary" line where a round or the summary belongs`},
		"a round after it":  {rounds + summary + "\n" + round(2, "query"), `hostbench output line 4 is a "round" line where a round or the summary belongs`},
		"an unknown line":   {`{"kind":"debug"}` + "\n" + rounds + summary, `hostbench output line 1 is a "debug" line`},
		"a missing round":   {round(1, "query") + "\n" + summary, "hostbench printed 1 round lines for 1 rounds of 2 modes"},
		"a wrong summary":   {rounds + `{"kind":"summary","rounds":"one"}`, "hostbench's summary does not parse"},
		"unverified counts": {rounds + strings.Replace(summary, `"verified":true`, `"verified":false,"mismatches":["a call started a process"]`, 1), "hostbench's counts do not match its calls: [a call started a process]"},
		"a process started": {rounds + strings.Replace(summary, `"calls":21,"processStarts":0,"medianCallsPerSecond":400`, `"calls":21,"processStarts":1,"medianCallsPerSecond":400`, 1), "hostbench's summary counts 1 processes started in its rounds, want none"},
		"a stalled mode":    {rounds + strings.Replace(summary, `"medianCallsPerSecond":400`, `"medianCallsPerSecond":-1`, 1), "hostbench's summary has method.medianCallsPerSecond -1, want a positive rate"},
	} {
		t.Run(name, func(t *testing.T) {
			_, _, err := parseHostbench([]byte(tc.out))
			if err == nil || !strings.HasPrefix(err.Error(), tc.want) {
				t.Fatalf("err = %v, want it to start with %q", err, tc.want)
			}
		})
	}
}

// needBench is need for a benchmark: the prefix, or the benchmark ends,
// skipped when the tools are absent (failed under CI=true), failed when the
// prefix could not be prepared.
func needBench(b *testing.B) *prefix {
	b.Helper()
	if missing != "" {
		if os.Getenv("CI") == "true" {
			b.Fatalf("%s; %s (CI=true: the Windows benchmarks must run)", missing, install)
		}
		b.Skipf("%s; %s", missing, install)
	}
	if setupErr != nil {
		b.Fatal(setupErr)
	}
	return px
}

// hostbenchRun is the one run of hostbench that every call of the benchmark
// reports.
var hostbenchRun struct {
	once    sync.Once
	rounds  []string
	summary hostbenchSummary
	err     error
}

// BenchmarkHostCallsWMI measures host calls per second through WMI in the
// calling process, as the agent makes them: it builds
// test/wine/cmd/hostbench for Windows and runs it under Wine, where the
// calls go to Wine's own WMI service (a query of Win32_BIOS and
// StdRegProv.GetStringValue, interleaved rounds). hostbench runs its own
// rounds, so the benchmark runs it once whatever b.N is; run it with
// -benchtime 1x (make bench-windows), where ns/op is the wall time of the
// whole run. It reports each call's median calls per second and CPU per
// call, beside the PowerShell worker's figure of the previous report, and
// logs every round. Wine's WMI is not Windows' WMI provider host: the
// rates say nothing about the MSFT_* providers' own cost on a node.
func BenchmarkHostCallsWMI(b *testing.B) {
	p := needBench(b)
	b.StopTimer()
	hostbenchRun.once.Do(func() {
		hostbenchRun.rounds, hostbenchRun.summary, hostbenchRun.err = runHostbench(b, p)
	})
	for _, line := range hostbenchRun.rounds {
		b.Log(line)
	}
	if hostbenchRun.err != nil {
		b.Fatal(hostbenchRun.err)
	}
	s := hostbenchRun.summary
	b.Logf("%d rounds of %d calls under Wine %s: query of Win32_BIOS %.1f calls/s, %.3f ms CPU per call; StdRegProv.GetStringValue %.1f calls/s, %.3f ms CPU per call; %d processes started",
		s.Rounds, s.CallsPerRound, s.Wine, s.Query.MedianCallsPerSecond, s.Query.MedianCPUMsPerCall, s.Method.MedianCallsPerSecond, s.Method.MedianCPUMsPerCall, s.ProcessStarts)
	b.Logf("previously, through a PowerShell worker: %s calls/s, one process per call %s; %s", s.PreviousWorker.WorkerCallsPerSecond, s.PreviousWorker.ProcessCallsPerSecond, s.PreviousWorker.Source)
	for name, m := range map[string]hostbenchMode{"query": s.Query, "method": s.Method} {
		if m.WarmupProcessStarts > 0 {
			b.Logf("the %s mode's warm-up started %d process (Wine's desktop, which Windows runs from logon): %v", name, m.WarmupProcessStarts, m.WarmupProcesses)
		}
	}
	b.Log(s.Note)
	b.ReportMetric(s.Query.MedianCallsPerSecond, "query-calls/s")
	b.ReportMetric(s.Method.MedianCallsPerSecond, "method-calls/s")
	b.ReportMetric(s.Query.MedianCPUMsPerCall, "query-cpu-ms/call")
	b.ReportMetric(s.Method.MedianCPUMsPerCall, "method-cpu-ms/call")
}

// runHostbench builds hostbench.exe, runs it under Wine and parses its
// output.
func runHostbench(b *testing.B, p *prefix) ([]string, hostbenchSummary, error) {
	root, err := filepath.Abs("../..")
	if err != nil {
		return nil, hostbenchSummary{}, err
	}
	exe := p.path(`C:\pipeguard\bench\hostbench.exe`)
	build := exec.Command("go", "build", "-trimpath", "-o", exe, "./test/wine/cmd/hostbench")
	build.Dir = root
	build.Env = p.goEnv
	if out, err := build.CombinedOutput(); err != nil {
		return nil, hostbenchSummary{}, fmt.Errorf("building hostbench.exe: %v\n%s", err, out)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Minute)
	defer cancel()
	cmd := p.command(ctx, exe)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	b.StartTimer()
	runErr := cmd.Run()
	b.StopTimer()
	rounds, s, err := parseHostbench(stdout.Bytes())
	if runErr != nil {
		return rounds, s, fmt.Errorf("hostbench.exe under Wine: %v\n%s", runErr, stderr.Bytes())
	}
	return rounds, s, err
}
