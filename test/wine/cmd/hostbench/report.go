//go:build windows

package main

import (
	"fmt"
	"slices"
	"strings"
	"time"
)

// The two calls hostbench measures.
const (
	// modeQuery is a WQL query of Win32_BIOS.
	modeQuery = "query"
	// modeMethod is the static method StdRegProv.GetStringValue.
	modeMethod = "method"
)

// previousWorker is the PowerShell worker's figure of the previous
// report, the last before the agent moved its host calls to WMI (make
// bench-windows at commit 9b623d3, quoted in docs/windows.md, Benchmark):
// two runs of 10 rounds of 20 calls of a constant Get-Disk script, under
// Wine with the Go stand-in for powershell.exe.
var previousWorker = previous{
	Source:                "make bench-windows at commit 9b623d3 (docs/windows.md, Benchmark): two runs of 10 rounds of 20 calls of a Get-Disk script through one PowerShell worker, under Wine with the Go stand-in for powershell.exe",
	WorkerCallsPerSecond:  "about 1,300 to 1,500",
	ProcessCallsPerSecond: "15 to 18 (one PowerShell process per call)",
}

// previous is a figure quoted from an earlier report, as it was written.
type previous struct {
	Source                string `json:"source"`
	WorkerCallsPerSecond  string `json:"workerCallsPerSecond"`
	ProcessCallsPerSecond string `json:"processCallsPerSecond"`
}

// note says what the figures measure.
const note = "Wine's WMI service is not Windows' WMI provider host: these rates are of the agent's side of a WMI call " +
	"(COM, marshalling the parameters and objects) against Wine's own Win32_BIOS and StdRegProv, and the ratio to the " +
	"PowerShell worker's figure says nothing about what the MSFT_* storage, SMB and iSCSI providers cost on a node."

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
	// CPUMsPerCall is hostbench's CPU time per call: the whole cost of a
	// call in the caller, where the agent makes it.
	CPUMsPerCall float64 `json:"cpuMsPerCall"`
}

// newRound makes the line of a round of calls calls that took wall,
// between two snapshots.
func newRound(n int, mode string, calls int, wall time.Duration, before, after usage) round {
	r := round{
		Kind: "round", Round: n, Mode: mode, Calls: calls,
		Seconds:       wall.Seconds(),
		ProcessStarts: after.processes - before.processes,
		CPUMsPerCall:  perCallMs(after.self-before.self, calls),
	}
	if wall > 0 {
		r.CallsPerSecond = float64(calls) / wall.Seconds()
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
	// rounds.
	ProcessStarts int `json:"processStarts"`
	// WarmupProcessStarts counts those of its warm-up, and WarmupProcesses
	// are the image paths of the job's other processes after it.
	WarmupProcessStarts  int      `json:"warmupProcessStarts"`
	WarmupProcesses      []string `json:"warmupProcesses,omitempty"`
	MedianCallsPerSecond float64  `json:"medianCallsPerSecond"`
	MedianCPUMsPerCall   float64  `json:"medianCpuMsPerCall"`
	// WarmupSeconds is the first call's wall time, before the rounds.
	WarmupSeconds float64 `json:"warmupSeconds"`
}

// summary is the last line hostbench prints.
type summary struct {
	Kind          string      `json:"kind"` // "summary"
	Rounds        int         `json:"rounds"`
	CallsPerRound int         `json:"callsPerRound"`
	Query         modeSummary `json:"query"`
	Method        modeSummary `json:"method"`
	// ProcessStarts counts every process the job gained from the first
	// call to the last, the warm-ups' included.
	ProcessStarts int `json:"processStarts"`
	// PreviousWorker is the PowerShell worker's figure, quoted.
	PreviousWorker previous `json:"previousWorker"`
	// Wine is Wine's version when hostbench runs under Wine.
	Wine string `json:"wine,omitempty"`
	// Verified is true when every count matched; Mismatches say which did
	// not.
	Verified   bool     `json:"verified"`
	Mismatches []string `json:"mismatches,omitempty"`
	Note       string   `json:"note"`
}

// summarize makes the summary of the modes (query first, then method);
// started is how many processes the job gained over the whole run.
func summarize(o options, ms []*mode, started int, wine string) summary {
	s := summary{Kind: "summary", Rounds: o.rounds, CallsPerRound: o.calls, ProcessStarts: started,
		PreviousWorker: previousWorker, Wine: wine, Note: note}
	for _, m := range ms {
		sum := summarizeMode(m.rounds)
		sum.Calls, sum.ProcessStarts, sum.WarmupSeconds = m.calls, m.starts, m.warmup.Seconds()
		sum.WarmupProcessStarts, sum.WarmupProcesses = m.warmupStarts, m.warmupImages
		switch m.name {
		case modeQuery:
			s.Query = sum
		case modeMethod:
			s.Method = sum
		}
	}
	s.Mismatches = verify(s)
	s.Verified = len(s.Mismatches) == 0
	return s
}

func summarizeMode(rounds []round) modeSummary {
	var cps, cpu []float64
	for _, r := range rounds {
		cps = append(cps, r.CallsPerSecond)
		cpu = append(cpu, r.CPUMsPerCall)
	}
	return modeSummary{MedianCallsPerSecond: median(cps), MedianCPUMsPerCall: median(cpu)}
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

// wineDesktop is the image of Wine's desktop process.
const wineDesktop = `C:\windows\system32\explorer.exe`

// verify checks the counts: no process started in the rounds of either
// mode or outside the calls, none in a warm-up but, under Wine, Wine's
// desktop process; and every round of each mode measured a rate. It
// returns what did not match.
func verify(s summary) []string {
	var bad []string
	warmups := 0
	for _, m := range []struct {
		name string
		s    modeSummary
	}{{modeQuery, s.Query}, {modeMethod, s.Method}} {
		if m.s.ProcessStarts != 0 {
			bad = append(bad, fmt.Sprintf("the %d calls of the %s mode started %d processes (counted by the job), want none", m.s.Calls, m.name, m.s.ProcessStarts))
		}
		warmups += m.s.WarmupProcessStarts
		if n := m.s.WarmupProcessStarts; n > 0 {
			desktop := s.Wine != "" && n == 1 && len(m.s.WarmupProcesses) == 1 && strings.EqualFold(m.s.WarmupProcesses[0], wineDesktop)
			if !desktop {
				bad = append(bad, fmt.Sprintf("the warm-up of the %s mode started %d processes (running: %v), want none but, under Wine, Wine's desktop process %s", m.name, n, m.s.WarmupProcesses, wineDesktop))
			}
		}
		if want := s.Rounds*s.CallsPerRound + 1; m.s.Calls != want {
			bad = append(bad, fmt.Sprintf("the %s mode made %d calls, want %d (%d rounds of %d and the warm-up)", m.name, m.s.Calls, want, s.Rounds, s.CallsPerRound))
		}
		if !(m.s.MedianCallsPerSecond > 0) {
			bad = append(bad, fmt.Sprintf("the %s mode measured a median of %v calls/s, want a positive rate", m.name, m.s.MedianCallsPerSecond))
		}
	}
	if outside := s.ProcessStarts - warmups - s.Query.ProcessStarts - s.Method.ProcessStarts; outside != 0 {
		bad = append(bad, fmt.Sprintf("%d processes started outside the calls (counted by the job), want none", outside))
	}
	return bad
}
