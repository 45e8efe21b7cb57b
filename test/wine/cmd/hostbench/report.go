//go:build windows

package main

import (
	"fmt"
	"slices"
	"time"
)

// The two ways of running a host call that hostbench compares.
const (
	// modeProcess is runner.Exec: one PowerShell process per call.
	modeProcess = "process"
	// modeWorker is runner.Workers of size 1: one long-lived worker.
	modeWorker = "worker"
)

// round is the line printed for one round of one mode.
type round struct {
	Kind  string `json:"kind"` // "round"
	Round int    `json:"round"`
	Mode  string `json:"mode"`
	Calls int    `json:"calls"`
	// Seconds is the round's wall time.
	Seconds        float64 `json:"seconds"`
	CallsPerSecond float64 `json:"callsPerSecond"`
	// ProcessStarts is how many processes the counting job gained.
	ProcessStarts int `json:"processStarts"`
	// SelfCPUMsPerCall is hostbench's own CPU time per call.
	SelfCPUMsPerCall float64 `json:"selfCpuMsPerCall"`
	// ChildrenCPUMsPerCall is the CPU time per call of the processes
	// hostbench started; null where it cannot be read.
	ChildrenCPUMsPerCall *float64 `json:"childrenCpuMsPerCall"`
}

// newRound makes the line of a round of calls calls that took wall, between
// two snapshots; keepsCPU says whether the job accounts CPU time at all.
func newRound(n int, mode string, calls int, wall time.Duration, before, after usage, keepsCPU bool) round {
	r := round{
		Kind: "round", Round: n, Mode: mode, Calls: calls,
		Seconds:          wall.Seconds(),
		ProcessStarts:    after.processes - before.processes,
		SelfCPUMsPerCall: perCallMs(after.self-before.self, calls),
	}
	if wall > 0 {
		r.CallsPerSecond = float64(calls) / wall.Seconds()
	}
	if keepsCPU {
		// The job accounts hostbench's own time too; its clock ticks
		// apart from GetProcessTimes', so a difference below zero is 0.
		children := max((after.job-before.job)-(after.self-before.self), 0)
		ms := perCallMs(children, calls)
		r.ChildrenCPUMsPerCall = &ms
	}
	return r
}

func perCallMs(d time.Duration, calls int) float64 {
	if calls <= 0 {
		return 0
	}
	return float64(d) / float64(time.Millisecond) / float64(calls)
}

// modeSummary sums up the rounds of one mode.
type modeSummary struct {
	// Calls counts every call, the warm-up call included.
	Calls int `json:"calls"`
	// ProcessStarts counts the processes the job gained during this mode's
	// calls, the warm-up included.
	ProcessStarts              int      `json:"processStarts"`
	MedianCallsPerSecond       float64  `json:"medianCallsPerSecond"`
	MedianSelfCPUMsPerCall     float64  `json:"medianSelfCpuMsPerCall"`
	MedianChildrenCPUMsPerCall *float64 `json:"medianChildrenCpuMsPerCall"`
	// WarmupSeconds is the first call's wall time, before the rounds; for
	// the worker it holds the worker's start.
	WarmupSeconds float64 `json:"warmupSeconds"`
}

// summary is the last line hostbench prints.
type summary struct {
	Kind          string      `json:"kind"` // "summary"
	Rounds        int         `json:"rounds"`
	CallsPerRound int         `json:"callsPerRound"`
	Process       modeSummary `json:"process"`
	Worker        modeSummary `json:"worker"`
	// MedianRatio is the median over the rounds of the worker's calls per
	// second ÷ the process mode's in the same round.
	MedianRatio float64 `json:"medianRatio"`
	// UnattributedProcessStarts counts the processes the job gained outside
	// every measured call; anything but 0 is a mismatch.
	UnattributedProcessStarts int `json:"unattributedProcessStarts"`
	// WorkerStartsReported is the runner's own count of worker starts
	// (pipeguard_agent_powershell_worker_starts_total).
	WorkerStartsReported int `json:"workerStartsReported"`
	// StandinLog counts the PowerShell stand-in's log entries; null when
	// PIPEGUARD_STANDIN_LOG is not set.
	StandinLog *standinCount `json:"standinLog"`
	// ChildrenCPU says how the started processes' CPU time was read, or why
	// it could not be.
	ChildrenCPU string `json:"childrenCpu"`
	// PowerShell is the program both modes started; Wine is Wine's version
	// when hostbench runs under Wine.
	PowerShell string `json:"powershell"`
	Wine       string `json:"wine,omitempty"`
	// Verified is true when every count matched; Mismatches say which did
	// not.
	Verified   bool     `json:"verified"`
	Mismatches []string `json:"mismatches,omitempty"`
	Note       string   `json:"note"`
}

// summarize fills the medians and the ratio from the rounds of both modes,
// paired by round number.
func summarize(process, worker []round) (p, w modeSummary, ratio float64) {
	p, w = summarizeMode(process), summarizeMode(worker)
	byRound := map[int]float64{}
	for _, r := range process {
		byRound[r.Round] = r.CallsPerSecond
	}
	var ratios []float64
	for _, r := range worker {
		if a, ok := byRound[r.Round]; ok && a > 0 {
			ratios = append(ratios, r.CallsPerSecond/a)
		}
	}
	return p, w, median(ratios)
}

func summarizeMode(rounds []round) modeSummary {
	var cps, self, children []float64
	for _, r := range rounds {
		cps = append(cps, r.CallsPerSecond)
		self = append(self, r.SelfCPUMsPerCall)
		if r.ChildrenCPUMsPerCall != nil {
			children = append(children, *r.ChildrenCPUMsPerCall)
		}
	}
	s := modeSummary{MedianCallsPerSecond: median(cps), MedianSelfCPUMsPerCall: median(self)}
	if len(rounds) > 0 && len(children) == len(rounds) {
		m := median(children)
		s.MedianChildrenCPUMsPerCall = &m
	}
	return s
}

// median returns the middle of xs (the mean of the two middle ones for an
// even count), 0 for none.
func median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

// verify checks the process starts: one per call through runner.Exec, one
// in all for the worker, none outside the calls, and, when the stand-in
// logged, the same counts in its log. It returns what did not match.
func verify(s summary) []string {
	var bad []string
	if s.Process.ProcessStarts != s.Process.Calls {
		bad = append(bad, fmt.Sprintf("the %d calls through runner.Exec started %d processes (counted by the job), want one per call", s.Process.Calls, s.Process.ProcessStarts))
	}
	if s.Worker.ProcessStarts != 1 {
		bad = append(bad, fmt.Sprintf("the %d calls through one PowerShell worker started %d processes (counted by the job), want 1", s.Worker.Calls, s.Worker.ProcessStarts))
	}
	if s.WorkerStartsReported != 1 {
		bad = append(bad, fmt.Sprintf("the worker pool reports %d worker starts (pipeguard_agent_powershell_worker_starts_total), want 1", s.WorkerStartsReported))
	}
	if s.UnattributedProcessStarts != 0 {
		bad = append(bad, fmt.Sprintf("%d processes started outside the measured calls (counted by the job), want 0", s.UnattributedProcessStarts))
	}
	if l := s.StandinLog; l != nil {
		if l.Processes != s.Process.Calls {
			bad = append(bad, fmt.Sprintf("the stand-in logged %d one-off PowerShell runs in %s, want %d (one per call through runner.Exec)", l.Processes, l.Dir, s.Process.Calls))
		}
		if l.WorkerStarts != 1 {
			bad = append(bad, fmt.Sprintf("the stand-in logged %d worker starts in %s, want 1", l.WorkerStarts, l.Dir))
		}
		if l.WorkerRuns != s.Worker.Calls {
			bad = append(bad, fmt.Sprintf("the stand-in logged %d worker requests in %s, want %d (one per call through the worker)", l.WorkerRuns, l.Dir, s.Worker.Calls))
		}
	}
	return bad
}
