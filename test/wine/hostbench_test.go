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
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// hostbenchMode is what hostbench's summary says of one mode.
type hostbenchMode struct {
	Calls                      int      `json:"calls"`
	ProcessStarts              int      `json:"processStarts"`
	MedianCallsPerSecond       float64  `json:"medianCallsPerSecond"`
	MedianSelfCPUMsPerCall     float64  `json:"medianSelfCpuMsPerCall"`
	MedianChildrenCPUMsPerCall *float64 `json:"medianChildrenCpuMsPerCall"`
}

// hostbenchSummary is the last line of test/wine/cmd/hostbench's output.
type hostbenchSummary struct {
	Kind          string        `json:"kind"`
	Rounds        int           `json:"rounds"`
	CallsPerRound int           `json:"callsPerRound"`
	Process       hostbenchMode `json:"process"`
	Worker        hostbenchMode `json:"worker"`
	MedianRatio   float64       `json:"medianRatio"`
	StandinLog    *struct {
		Processes    int `json:"processes"`
		WorkerStarts int `json:"workerStarts"`
		WorkerRuns   int `json:"workerRuns"`
	} `json:"standinLog"`
	ChildrenCPU string   `json:"childrenCpu"`
	Verified    bool     `json:"verified"`
	Mismatches  []string `json:"mismatches"`
	Note        string   `json:"note"`
}

// parseHostbench reads hostbench's output: one JSON object per line, a
// round line for each round of each mode, then the summary. It fails on
// anything else, and on a summary that is unverified or holds no rate, so
// that a broken run never reports a ratio.
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
		return rounds, s, fmt.Errorf("hostbench's process starts do not match its calls: %v", s.Mismatches)
	}
	for name, v := range map[string]float64{"medianRatio": s.MedianRatio,
		"process.medianCallsPerSecond": s.Process.MedianCallsPerSecond, "worker.medianCallsPerSecond": s.Worker.MedianCallsPerSecond} {
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
	rounds := round(1, "process") + "\n" + round(1, "worker") + "\n"
	summary := `{"kind":"summary","rounds":1,"callsPerRound":20,"process":{"calls":21,"processStarts":21,"medianCallsPerSecond":16},` +
		`"worker":{"calls":21,"processStarts":1,"medianCallsPerSecond":900},"medianRatio":56.25,"verified":true,"note":"n"}`
	r, s, err := parseHostbench([]byte(rounds + summary + "\n"))
	if err != nil || len(r) != 2 || s.MedianRatio != 56.25 || s.Worker.MedianCallsPerSecond != 900 || s.Process.ProcessStarts != 21 {
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
		"a round after it":  {rounds + summary + "\n" + round(2, "process"), `hostbench output line 4 is a "round" line where a round or the summary belongs`},
		"an unknown line":   {`{"kind":"debug"}` + "\n" + rounds + summary, `hostbench output line 1 is a "debug" line`},
		"a missing round":   {round(1, "process") + "\n" + summary, "hostbench printed 1 round lines for 1 rounds of 2 modes"},
		"a wrong summary":   {rounds + `{"kind":"summary","rounds":"one"}`, "hostbench's summary does not parse"},
		"unverified counts": {rounds + strings.Replace(summary, `"verified":true`, `"verified":false,"mismatches":["the worker restarted"]`, 1), "hostbench's process starts do not match its calls: [the worker restarted]"},
		"no ratio":          {rounds + strings.Replace(summary, `"medianRatio":56.25`, `"medianRatio":0`, 1), "hostbench's summary has medianRatio 0, want a positive rate"},
		"a stalled mode":    {rounds + strings.Replace(summary, `"medianCallsPerSecond":16`, `"medianCallsPerSecond":-1`, 1), "hostbench's summary has process.medianCallsPerSecond -1, want a positive rate"},
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

// BenchmarkHostCallsWorkerVsProcess measures how many more host calls per
// second the agent makes through a PowerShell worker than with one
// PowerShell process per call: it builds test/wine/cmd/hostbench for
// Windows and runs it under Wine, where powershell.exe is the stand-in
// (test/wine/cmd/powershell). hostbench runs its own interleaved rounds
// (one process per call, then the worker, 10 times over), so the benchmark
// runs it once whatever b.N is: more runs would only repeat those rounds,
// minutes each under load, and a later call with a larger b.N reports the
// same run. Run it with -benchtime 1x (make bench-windows), where ns/op is
// the wall time of the whole run. It reports the median of the per-round
// ratios worker ÷ process and each mode's median calls per second, and logs
// every round. The stand-in is a Go program that starts in tens of
// milliseconds, not PowerShell's 600 ms: on Windows the ratio is larger.
func BenchmarkHostCallsWorkerVsProcess(b *testing.B) {
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
	b.Logf("%d rounds of %d calls: worker %.1f calls/s, one process per call %.1f calls/s; median ratio %.1f",
		s.Rounds, s.CallsPerRound, s.Worker.MedianCallsPerSecond, s.Process.MedianCallsPerSecond, s.MedianRatio)
	b.Logf("process starts: %d for %d calls with one process per call, %d for %d calls through the worker", s.Process.ProcessStarts, s.Process.Calls, s.Worker.ProcessStarts, s.Worker.Calls)
	if l := s.StandinLog; l != nil {
		b.Logf("the stand-in logged %d one-off runs, %d worker starts and %d worker requests", l.Processes, l.WorkerStarts, l.WorkerRuns)
	}
	b.Logf("CPU per call of the agent's side: %.2f ms with one process per call, %.2f ms through the worker; the started processes' CPU: %s",
		s.Process.MedianSelfCPUMsPerCall, s.Worker.MedianSelfCPUMsPerCall, s.ChildrenCPU)
	b.Log(s.Note)
	b.ReportMetric(s.MedianRatio, "worker/process")
	b.ReportMetric(s.Worker.MedianCallsPerSecond, "worker-calls/s")
	b.ReportMetric(s.Process.MedianCallsPerSecond, "process-calls/s")
}

// runHostbench builds hostbench.exe, runs it under Wine with the stand-in
// logging to a directory of its own, and parses its output.
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
	logs, err := os.MkdirTemp(p.path(`C:\pipeguard\bench`), "standin-")
	if err != nil {
		return nil, hostbenchSummary{}, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Minute)
	defer cancel()
	cmd := p.command(ctx, exe)
	cmd.Env = append(slices.Clone(p.env), `PIPEGUARD_STANDIN_LOG=C:\pipeguard\bench\`+filepath.Base(logs)+`\powershell.jsonl`)
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
