//go:build windows

package main

import (
	"math"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestMedian(t *testing.T) {
	for name, tc := range map[string]struct {
		in   []float64
		want float64
	}{
		"none":          {nil, 0},
		"one":           {[]float64{7}, 7},
		"odd, unsorted": {[]float64{9, 1, 5}, 5},
		"even":          {[]float64{4, 1, 3, 2}, 2.5},
		"an outlier":    {[]float64{10, 11, 12, 1e9, 10.5}, 11},
	} {
		t.Run(name, func(t *testing.T) {
			in := slices.Clone(tc.in)
			if got := median(in); got != tc.want {
				t.Fatalf("median(%v) = %v, want %v", tc.in, got, tc.want)
			}
			if !slices.Equal(in, tc.in) {
				t.Fatalf("median reordered its input: %v, was %v", in, tc.in)
			}
		})
	}
}

func TestNewRound(t *testing.T) {
	before := usage{self: 100 * time.Millisecond, job: 500 * time.Millisecond, processes: 3}
	after := usage{self: 140 * time.Millisecond, job: 940 * time.Millisecond, processes: 23}
	r := newRound(4, modeProcess, 20, 2*time.Second, before, after, true)
	if r.Kind != "round" || r.Round != 4 || r.Mode != modeProcess || r.Calls != 20 || r.ProcessStarts != 20 {
		t.Fatalf("round %+v: want kind round, round 4, mode process, 20 calls, 20 process starts", r)
	}
	if r.CallsPerSecond != 10 || r.Seconds != 2 || r.SelfCPUMsPerCall != 2 {
		t.Fatalf("round %+v: want 10 calls/s over 2 s, 2 ms of own CPU per call", r)
	}
	// 440 ms of job time, 40 of them hostbench's: 400 ms for 20 calls.
	if r.ChildrenCPUMsPerCall == nil || *r.ChildrenCPUMsPerCall != 20 {
		t.Fatalf("children's CPU per call = %v, want 20 ms", r.ChildrenCPUMsPerCall)
	}

	t.Run("a job that accounts no CPU reports none, not zero", func(t *testing.T) {
		r := newRound(1, modeWorker, 20, time.Second, before, usage{self: 150 * time.Millisecond, processes: 3}, false)
		if r.ChildrenCPUMsPerCall != nil {
			t.Fatalf("children's CPU per call = %v, want null", *r.ChildrenCPUMsPerCall)
		}
	})
	t.Run("the job's clock behind GetProcessTimes' gives 0, never less", func(t *testing.T) {
		r := newRound(1, modeWorker, 10, time.Second, usage{self: 0, job: 0}, usage{self: 30 * time.Millisecond, job: 20 * time.Millisecond}, true)
		if r.ChildrenCPUMsPerCall == nil || *r.ChildrenCPUMsPerCall != 0 {
			t.Fatalf("children's CPU per call = %v, want 0", r.ChildrenCPUMsPerCall)
		}
	})
	t.Run("a round of no measurable time is 0 calls/s, not infinite", func(t *testing.T) {
		r := newRound(1, modeWorker, 10, 0, usage{}, usage{}, false)
		if r.CallsPerSecond != 0 || math.IsInf(r.CallsPerSecond, 0) {
			t.Fatalf("calls/s = %v, want 0", r.CallsPerSecond)
		}
	})
}

func cps(mode string, perRound ...float64) []round {
	var rs []round
	for i, c := range perRound {
		ms := float64(i)
		rs = append(rs, round{Round: i + 1, Mode: mode, CallsPerSecond: c, SelfCPUMsPerCall: ms, ChildrenCPUMsPerCall: &ms})
	}
	return rs
}

func TestSummarizePairsTheRoundsByNumber(t *testing.T) {
	process := cps(modeProcess, 10, 20, 0)  // round 3 measured nothing
	worker := cps(modeWorker, 100, 1000, 5) // ratios 10, 50, and none
	worker = append(worker, round{Round: 9, Mode: modeWorker, CallsPerSecond: 1e6})
	p, w, ratio := summarize(process, worker)
	if ratio != 30 {
		t.Fatalf("median ratio = %v, want 30: the median of 10 and 50, from the rounds both modes ran", ratio)
	}
	if p.MedianCallsPerSecond != 10 || p.MedianChildrenCPUMsPerCall == nil || *p.MedianChildrenCPUMsPerCall != 1 {
		t.Fatalf("process summary %+v: want a median of 10 calls/s and 1 ms of children's CPU per call", p)
	}
	if w.MedianChildrenCPUMsPerCall != nil {
		t.Fatalf("worker children's CPU = %v, want null: a round did not measure it", *w.MedianChildrenCPUMsPerCall)
	}
}

func good() summary {
	return summary{
		Process:              modeSummary{Calls: 201, ProcessStarts: 201},
		Worker:               modeSummary{Calls: 201, ProcessStarts: 1},
		WorkerStartsReported: 1,
		StandinLog:           &standinCount{Dir: `C:\log`, Processes: 201, WorkerStarts: 1, WorkerRuns: 201},
	}
}

func TestVerify(t *testing.T) {
	for name, tc := range map[string]struct {
		change func(*summary)
		want   string
	}{
		"all counts match": {func(*summary) {}, ""},
		"no stand-in log":  {func(s *summary) { s.StandinLog = nil }, ""},
		"a process call started no process": {func(s *summary) { s.Process.ProcessStarts = 200 },
			"the 201 calls through runner.Exec started 200 processes (counted by the job), want one per call"},
		"the worker restarted": {func(s *summary) { s.Worker.ProcessStarts = 2 },
			"the 201 calls through one PowerShell worker started 2 processes (counted by the job), want 1"},
		"the pool counted another start": {func(s *summary) { s.WorkerStartsReported = 2 },
			"the worker pool reports 2 worker starts (pipeguard_agent_powershell_worker_starts_total), want 1"},
		"a process started between rounds": {func(s *summary) { s.UnattributedProcessStarts = 1 },
			"1 processes started outside the measured calls (counted by the job), want 0"},
		"the stand-in saw fewer one-off runs": {func(s *summary) { s.StandinLog.Processes = 3 },
			`the stand-in logged 3 one-off PowerShell runs in C:\log, want 201 (one per call through runner.Exec)`},
		"the stand-in saw two workers": {func(s *summary) { s.StandinLog.WorkerStarts = 2 },
			`the stand-in logged 2 worker starts in C:\log, want 1`},
		"the stand-in saw fewer requests": {func(s *summary) { s.StandinLog.WorkerRuns = 0 },
			`the stand-in logged 0 worker requests in C:\log, want 201 (one per call through the worker)`},
	} {
		t.Run(name, func(t *testing.T) {
			s := good()
			tc.change(&s)
			got := strings.Join(verify(s), "; ")
			if got != tc.want {
				t.Fatalf("verify = %q\nwant     %q", got, tc.want)
			}
		})
	}
}
