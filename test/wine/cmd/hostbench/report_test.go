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
	before := usage{self: 100 * time.Millisecond, processes: 1}
	after := usage{self: 140 * time.Millisecond, processes: 1}
	r := newRound(4, modeQuery, 20, 2*time.Second, before, after)
	if r.Kind != "round" || r.Round != 4 || r.Mode != modeQuery || r.Calls != 20 || r.ProcessStarts != 0 {
		t.Fatalf("round %+v: want kind round, round 4, mode query, 20 calls, no process started", r)
	}
	if r.CallsPerSecond != 10 || r.Seconds != 2 || r.CPUMsPerCall != 2 {
		t.Fatalf("round %+v: want 10 calls/s over 2 s, 2 ms of CPU per call", r)
	}
	if r := newRound(1, modeMethod, 5, time.Second, before, usage{processes: 3}); r.ProcessStarts != 2 {
		t.Fatalf("a round whose job gained 2 processes reports %d", r.ProcessStarts)
	}
	t.Run("a round of no measurable time is 0 calls/s, not infinite", func(t *testing.T) {
		r := newRound(1, modeMethod, 10, 0, usage{}, usage{})
		if r.CallsPerSecond != 0 || math.IsInf(r.CallsPerSecond, 0) {
			t.Fatalf("calls/s = %v, want 0", r.CallsPerSecond)
		}
	})
}

func rounds(mode string, perRound ...float64) []round {
	var rs []round
	for i, c := range perRound {
		rs = append(rs, round{Round: i + 1, Mode: mode, CallsPerSecond: c, CPUMsPerCall: float64(i)})
	}
	return rs
}

func TestSummarize(t *testing.T) {
	o := options{rounds: 3, calls: 10}
	q := &mode{name: modeQuery, calls: 31, rounds: rounds(modeQuery, 300, 100, 200), warmup: time.Second}
	m := &mode{name: modeMethod, calls: 31, rounds: rounds(modeMethod, 50, 70, 60)}
	s := summarize(o, []*mode{q, m}, 0, "8.0")
	if s.Kind != "summary" || s.Query.MedianCallsPerSecond != 200 || s.Method.MedianCallsPerSecond != 60 || s.Query.MedianCPUMsPerCall != 1 {
		t.Fatalf("summary %+v: want medians of 200 and 60 calls/s, 1 ms of CPU per call", s)
	}
	if !s.Verified || s.Query.WarmupSeconds != 1 || s.Wine != "8.0" {
		t.Fatalf("summary %+v: want verified, a warm-up of 1 s, Wine 8.0", s)
	}
	if !strings.Contains(s.PreviousWorker.WorkerCallsPerSecond, "1,300") || !strings.Contains(s.Note, "not Windows' WMI provider host") {
		t.Fatalf("summary %+v: want the worker's previous figure and the note on Wine's WMI", s)
	}
}

func good() summary {
	return summary{Rounds: 10, CallsPerRound: 20,
		Query:  modeSummary{Calls: 201, MedianCallsPerSecond: 900},
		Method: modeSummary{Calls: 201, MedianCallsPerSecond: 400}}
}

func TestVerify(t *testing.T) {
	for name, tc := range map[string]struct {
		change func(*summary)
		want   string
	}{
		"all counts match": {func(*summary) {}, ""},
		"a query started a process": {func(s *summary) { s.Query.ProcessStarts, s.ProcessStarts = 1, 1 },
			"the 201 calls of the query mode started 1 processes (counted by the job), want none"},
		"a method call started a process": {func(s *summary) { s.Method.ProcessStarts, s.ProcessStarts = 3, 3 },
			"the 201 calls of the method mode started 3 processes (counted by the job), want none"},
		"a process started between rounds": {func(s *summary) { s.ProcessStarts = 1 },
			"1 processes started outside the calls (counted by the job), want none"},
		"Wine's desktop in a warm-up": {func(s *summary) {
			s.Wine, s.ProcessStarts, s.Query.WarmupProcessStarts, s.Query.WarmupProcesses = "8.0", 1, 1, []string{`C:\windows\system32\explorer.exe`}
		}, ""},
		"the desktop off Wine": {func(s *summary) {
			s.ProcessStarts, s.Query.WarmupProcessStarts, s.Query.WarmupProcesses = 1, 1, []string{`C:\windows\system32\explorer.exe`}
		}, `the warm-up of the query mode started 1 processes (running: [C:\windows\system32\explorer.exe]), want none but, under Wine, Wine's desktop process C:\windows\system32\explorer.exe`},
		"another program in a warm-up": {func(s *summary) {
			s.Wine, s.ProcessStarts, s.Method.WarmupProcessStarts, s.Method.WarmupProcesses = "8.0", 1, 1, []string{`C:\windows\system32\cmd.exe`}
		}, `the warm-up of the method mode started 1 processes (running: [C:\windows\system32\cmd.exe]), want none but, under Wine, Wine's desktop process C:\windows\system32\explorer.exe`},
		"a process that ended in a warm-up": {func(s *summary) {
			s.Wine, s.ProcessStarts, s.Query.WarmupProcessStarts = "8.0", 1, 1
		}, `the warm-up of the query mode started 1 processes (running: []), want none but, under Wine, Wine's desktop process C:\windows\system32\explorer.exe`},
		"calls missing": {func(s *summary) { s.Method.Calls = 200 },
			"the method mode made 200 calls, want 201 (10 rounds of 20 and the warm-up)"},
		"no rate": {func(s *summary) { s.Query.MedianCallsPerSecond = 0 },
			"the query mode measured a median of 0 calls/s, want a positive rate"},
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
