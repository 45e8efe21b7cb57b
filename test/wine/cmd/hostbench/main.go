//go:build windows

// Command hostbench measures what the PowerShell workers save. It runs one
// constant script, with one value in its environment, through runner.Exec,
// which starts a PowerShell process per call, and through runner.Workers
// with one long-lived worker, in interleaved rounds (process, worker,
// process, worker, ...) so that both modes see the same load on the machine.
// Each mode first makes one warm-up call, outside the rounds: for the
// worker, its start.
//
// It prints one JSON line per round: calls per second, the processes
// started, and the CPU time per call of hostbench itself (GetProcessTimes)
// and of the processes it started. Both counts come from a Job object that
// holds hostbench and so every process it starts: the job counts them, and
// on Windows accounts their CPU time, even after they end. The last line is
// the summary: the median calls per second of each mode, the median of the
// per-round ratios worker ÷ process, and the process starts of each mode,
// checked against one per call and one in all, against the worker pool's
// own count, and against the PowerShell stand-in's logs when
// PIPEGUARD_STANDIN_LOG names them. hostbench exits 1 when a count is off
// or a call fails, 2 on a bad flag.
//
// Under Wine (make bench-windows) powershell.exe is test/wine/cmd/powershell,
// a Go program standing in for PowerShell: it starts in tens of
// milliseconds, where Windows PowerShell takes about 600 ms of CPU. There the
// ratio is a process start under Wine against a round trip to a running
// worker, and on Windows it is larger. Wine accounts no CPU time to a job,
// and its GetProcessTimes of another process answers with the caller's own
// times, so under Wine the started processes' CPU time is reported as not
// obtainable (null) and only hostbench's own is measured.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strconv"
	"time"
	"unsafe"

	"github.com/prometheus/client_golang/prometheus"
	"golang.org/x/sys/windows"

	"github.com/pipeguard/pipeguard/agent/hostops/runner"
)

// The call both modes make: a read-only cmdlet that succeeds on any
// Windows host, and the value it reads from its environment.
const (
	benchOp     = "Get-Disk"
	benchScript = `Get-Disk | Where-Object Number -eq ([uint32]$Env:disknumber) | Select-Object -ExpandProperty IsOffline`
	benchValue  = "disknumber"
)

// options are hostbench's flags.
type options struct {
	rounds  int
	calls   int
	timeout time.Duration
}

// Bounds of the flags: a run stays within hours.
const (
	maxRounds = 1000
	maxCalls  = 10000
)

func main() { os.Exit(run(os.Args[1:], os.Stdout, os.Stderr)) }

// parseFlags reads and checks the flags.
func parseFlags(args []string, stderr io.Writer) (options, error) {
	var o options
	fs := flag.NewFlagSet("hostbench", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.IntVar(&o.rounds, "rounds", 10, "rounds of each mode, interleaved")
	fs.IntVar(&o.calls, "calls", 20, "calls per round")
	fs.DurationVar(&o.timeout, "timeout", 2*time.Minute, "deadline of each call")
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	var err error
	switch {
	case fs.NArg() > 0:
		err = fmt.Errorf("unexpected argument %q: hostbench takes flags only (-rounds, -calls, -timeout)", fs.Arg(0))
	case o.rounds < 1 || o.rounds > maxRounds:
		err = fmt.Errorf("-rounds %d is out of range: give 1 to %d", o.rounds, maxRounds)
	case o.calls < 1 || o.calls > maxCalls:
		err = fmt.Errorf("-calls %d is out of range: give 1 to %d", o.calls, maxCalls)
	case o.timeout <= 0:
		err = fmt.Errorf("-timeout %s is not positive: give the deadline of each call, e.g. 2m", o.timeout)
	}
	if err != nil {
		fmt.Fprintln(stderr, "hostbench:", err)
	}
	return o, err
}

// mode is one way of running the calls, and what was measured of it.
type mode struct {
	name   string
	r      runner.Runner
	calls  int // made so far, the warm-up included
	starts int // processes the job gained during this mode's calls
	warmup time.Duration
	rounds []round
}

// bench runs the calls and measures them.
type bench struct {
	o        options
	job      *accountingJob
	keepsCPU bool // the job accounts CPU time (not under Wine)
}

func run(args []string, stdout, stderr io.Writer) int {
	o, err := parseFlags(args, stderr)
	if err != nil {
		return 2
	}
	if err := benchmark(o, stdout); err != nil {
		fmt.Fprintln(stderr, "hostbench:", err)
		return 1
	}
	return 0
}

// benchmark runs the warm-up and the rounds, then prints the summary; it
// fails when a call fails or a count is off.
func benchmark(o options, stdout io.Writer) error {
	since := time.Now().UnixNano()
	job, err := newAccountingJob()
	if err != nil {
		return err
	}
	defer job.close()
	reg := prometheus.NewRegistry()
	workers, err := runner.NewWorkers(runner.WorkerOptions{Size: 1, Registerer: reg, Setting: "--powershell-workers"})
	if err != nil {
		return err
	}
	defer workers.Close()
	b := &bench{o: o, job: job}
	modes := []*mode{{name: modeProcess, r: runner.Exec{}}, {name: modeWorker, r: workers}}
	first, err := job.snapshot()
	if err != nil {
		return err
	}
	for _, m := range modes {
		if err := b.warmUp(m); err != nil {
			return err
		}
	}
	warm, err := job.snapshot()
	if err != nil {
		return err
	}
	// On Windows the job has accounted the warm-up processes' time by now.
	b.keepsCPU = warm.job > 0
	out := json.NewEncoder(stdout)
	for n := 1; n <= o.rounds; n++ {
		for _, m := range modes {
			r, err := b.round(m, n)
			if err != nil {
				return err
			}
			if err := out.Encode(r); err != nil {
				return fmt.Errorf("writing round %d: %w", n, err)
			}
		}
	}
	_ = workers.Close() // the worker ends, and logs its exit, before the logs are read
	last, err := job.snapshot()
	if err != nil {
		return err
	}
	s, err := b.summary(modes, reg, last.processes-first.processes, since)
	if err != nil {
		return err
	}
	if err := out.Encode(s); err != nil {
		return fmt.Errorf("writing the summary: %w", err)
	}
	if !s.Verified {
		return fmt.Errorf("the process starts do not match the calls, so the rates above do not measure what they claim: %v", s.Mismatches)
	}
	return nil
}

// call makes one call through m; n varies the request's value.
func (b *bench) call(m *mode, n int) error {
	ctx, cancel := context.WithTimeout(context.Background(), b.o.timeout)
	defer cancel()
	m.calls++
	if _, err := runner.Script(ctx, m.r, benchOp, benchScript, runner.Env(benchValue, strconv.Itoa(n%4))); err != nil {
		return fmt.Errorf("call %d through the %s mode: %w", m.calls, m.name, err)
	}
	return nil
}

// warmUp makes m's first call, outside the rounds.
func (b *bench) warmUp(m *mode) error {
	before, err := b.job.snapshot()
	if err != nil {
		return err
	}
	start := time.Now()
	if err := b.call(m, 0); err != nil {
		return fmt.Errorf("warm-up: %w", err)
	}
	m.warmup = time.Since(start)
	after, err := b.job.snapshot()
	if err != nil {
		return err
	}
	m.starts += after.processes - before.processes
	return nil
}

// round makes round n's calls through m and returns its line.
func (b *bench) round(m *mode, n int) (round, error) {
	before, err := b.job.snapshot()
	if err != nil {
		return round{}, err
	}
	start := time.Now()
	for i := range b.o.calls {
		if err := b.call(m, i); err != nil {
			return round{}, fmt.Errorf("round %d: %w", n, err)
		}
	}
	wall := time.Since(start)
	after, err := b.job.snapshot()
	if err != nil {
		return round{}, err
	}
	r := newRound(n, m.name, b.o.calls, wall, before, after, b.keepsCPU)
	m.starts += r.ProcessStarts
	m.rounds = append(m.rounds, r)
	return r, nil
}

// summary makes the summary line and verifies the counts; started is how
// many processes the job gained from the first call to the end.
func (b *bench) summary(modes []*mode, reg *prometheus.Registry, started int, since int64) (summary, error) {
	process, worker := modes[0], modes[1]
	s := summary{Kind: "summary", Rounds: b.o.rounds, CallsPerRound: b.o.calls, PowerShell: runner.PowerShellProgram, Wine: wineVersion()}
	s.Process, s.Worker, s.MedianRatio = summarize(process.rounds, worker.rounds)
	for _, p := range []struct {
		m *mode
		s *modeSummary
	}{{process, &s.Process}, {worker, &s.Worker}} {
		p.s.Calls, p.s.ProcessStarts, p.s.WarmupSeconds = p.m.calls, p.m.starts, p.m.warmup.Seconds()
	}
	s.UnattributedProcessStarts = started - process.starts - worker.starts
	var err error
	if s.WorkerStartsReported, err = counter(reg, "pipeguard_agent_powershell_worker_starts_total"); err != nil {
		return s, err
	}
	if path := os.Getenv("PIPEGUARD_STANDIN_LOG"); path != "" {
		c, err := countStandinLog(path, since)
		if err != nil {
			return s, err
		}
		s.StandinLog = &c
	}
	s.ChildrenCPU = "the counting job's accounting (JobObjectBasicAccountingInformation), less hostbench's own CPU time"
	if !b.keepsCPU {
		s.ChildrenCPU = "not obtainable: the counting job accounted no CPU time to the processes it held " +
			"(Wine accounts none to jobs, and its GetProcessTimes of another process answers with the caller's own times); " +
			"wall time and hostbench's own CPU time only"
	}
	s.Note = note(s.Wine)
	s.Mismatches = verify(s)
	s.Verified = len(s.Mismatches) == 0
	return s, nil
}

// note says what the ratio measures where hostbench ran.
func note(wine string) string {
	if wine != "" {
		return "under Wine " + wine + ", powershell.exe is test/wine/cmd/powershell, a Go program standing in for PowerShell: " +
			"it starts in tens of milliseconds, where Windows PowerShell takes about 600 ms of CPU. " +
			"This ratio is a process start under Wine against a round trip to a running worker; on Windows it is larger."
	}
	return "each process-mode call pays a start of " + runner.PowerShellProgram + "; each worker call, a round trip to the running worker"
}

// wineVersion returns Wine's version when hostbench runs under Wine, else
// "": Wine's ntdll.dll exports wine_get_version, Windows' does not.
func wineVersion() string {
	proc := windows.NewLazySystemDLL("ntdll.dll").NewProc("wine_get_version")
	if proc.Find() != nil {
		return ""
	}
	v, _, _ := proc.Call()
	if v == 0 {
		return "unknown version"
	}
	// v points into Wine's ntdll, not into Go's memory: read it as a *byte
	// without converting a uintptr, which the garbage collector forbids.
	return windows.BytePtrToString(*(**byte)(unsafe.Pointer(&v)))
}

// counter returns the sum of a counter's values in reg.
func counter(reg *prometheus.Registry, name string) (int, error) {
	families, err := reg.Gather()
	if err != nil {
		return 0, fmt.Errorf("reading the worker pool's metrics: %w", err)
	}
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
		total := 0.0
		for _, m := range f.GetMetric() {
			total += m.GetCounter().GetValue()
		}
		return int(total), nil
	}
	return 0, errors.New("the worker pool registered no " + name + ": cannot count the worker starts")
}
