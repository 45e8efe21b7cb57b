package main

import (
	"fmt"
	"io"
	"slices"
	"time"

	"github.com/pipeguard/pipeguard/hack/bench/internal/results"
)

// Result and Decisions are the file format hack/bench/report reads.
type (
	Result    = results.Review
	Decisions = results.Decisions
)

func summarize(opts Options, t *target, tl *tally, elapsed, cpu time.Duration) *Result {
	r := &Result{
		Target: opts.Target, Round: opts.Round, Workers: opts.Workers, Namespaces: t.namespaces, Policies: t.policies,
		Seconds: elapsed.Seconds(), Sent: tl.sent, Errors: tl.sent - len(tl.latencies), FirstError: tl.firstErr, Decisions: tl.decisions,
	}
	if len(tl.errors) > 0 {
		r.ErrorKinds = tl.errors
	}
	if tl.sent > 0 {
		r.ReviewBytes = tl.bytes / tl.sent
	}
	if elapsed > 0 {
		r.ReviewsPerSecond = float64(len(tl.latencies)) / elapsed.Seconds()
	}
	if len(tl.latencies) > 0 {
		r.CPUPerReviewMs = cpu.Seconds() * 1000 / float64(len(tl.latencies))
		lat := tl.latencies
		slices.Sort(lat)
		r.P50, r.P99 = ms(quantile(lat, 0.50)), ms(quantile(lat, 0.99))
	}
	return r
}

// quantile is the nearest-rank quantile of sorted latencies.
func quantile(sorted []time.Duration, q float64) time.Duration {
	i := int(float64(len(sorted))*q+0.999999) - 1
	return sorted[min(max(i, 0), len(sorted)-1)]
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// printSummary writes each target's medians over the rounds and, beside
// the floor's, the median of its per-round ratios to the floor.
func printSummary(w io.Writer, runs []*Result, names []string) {
	rps := func(r *Result) float64 { return r.ReviewsPerSecond }
	cpu := func(r *Result) float64 { return r.CPUPerReviewMs }
	fmt.Fprintf(w, "%-19s %6s %9s %10s %8s %8s %12s %12s\n", "target", "rounds", "reviews/s", "cpu µs/rev", "p50 ms", "errors", "rate/floor", "cpu/floor")
	for _, name := range names {
		errs := 0
		for _, r := range runs {
			if r.Target == name {
				errs += r.Errors
			}
		}
		fmt.Fprintf(w, "%-19s %6d %9.0f %10.1f %8.3f %8d %11.2f× %11.2f×\n", name, len(results.Of(runs, name, rps)),
			results.Median(results.Of(runs, name, rps)), 1000*results.Median(results.Of(runs, name, cpu)),
			results.Median(results.Of(runs, name, func(r *Result) float64 { return r.P50 })), errs,
			results.Median(results.RoundRatios(runs, name, TargetFloor, rps)), results.Median(results.RoundRatios(runs, name, TargetFloor, cpu)))
	}
	if slices.Contains(names, TargetGatekeeper) && slices.Contains(names, TargetPipeguard) {
		fmt.Fprintf(w, "pipeguard ÷ gatekeeper: reviews/s %.2f×, Gatekeeper's CPU per review %.2f× pipeguard's (medians of the per-round ratios)\n",
			results.Median(results.RoundRatios(runs, TargetPipeguard, TargetGatekeeper, rps)), results.Median(results.RoundRatios(runs, TargetGatekeeper, TargetPipeguard, cpu)))
	}
	for _, r := range runs {
		if r.FirstError != "" {
			fmt.Fprintf(w, "%s, round %d: %d errors %v; first: %s\n", r.Target, r.Round+1, r.Errors, r.ErrorKinds, r.FirstError)
		}
	}
	fmt.Fprintln(w, "Medians over the rounds; x/floor: the median of the per-round ratios to the floor. cpu: the server process's")
	fmt.Fprintln(w, "CPU time per correct review.")
}
