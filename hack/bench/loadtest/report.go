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

func summarize(opts Options, t *tally, elapsed, cpu time.Duration) *Result {
	r := &Result{
		Target: opts.Target, Server: "process", Rate: opts.Rate, Workers: opts.Workers,
		Namespaces: opts.Namespaces, Policies: opts.Policies,
		Seconds: elapsed.Seconds(), Sent: t.sent, Dropped: t.dropped,
		Errors: t.sent - len(t.latencies), FirstError: t.firstErr, Decisions: t.decisions,
	}
	if opts.InProcess {
		r.Server = "in-process"
	}
	r.Mode = "open"
	if opts.Rate == 0 {
		r.Mode, r.Rate = "closed", 0
	} else {
		r.Workers = 0
	}
	if len(t.errors) > 0 {
		r.ErrorKinds = t.errors
	}
	if elapsed > 0 {
		r.ReviewsPerSecond = float64(len(t.latencies)) / elapsed.Seconds()
		r.CoresUsed = cpu.Seconds() / elapsed.Seconds()
	}
	if len(t.latencies) > 0 {
		r.CPUPerReviewMs = cpu.Seconds() * 1000 / float64(len(t.latencies))
	}
	lat := t.latencies
	slices.Sort(lat)
	if len(lat) > 0 {
		var sum time.Duration
		for _, l := range lat {
			sum += l
		}
		r.Mean = ms(sum / time.Duration(len(lat)))
		r.P50, r.P90, r.P99 = ms(quantile(lat, 0.50)), ms(quantile(lat, 0.90)), ms(quantile(lat, 0.99))
		r.Max = ms(lat[len(lat)-1])
	}
	if r.Mode == "open" && len(t.service) > 0 {
		slices.Sort(t.lags)
		slices.Sort(t.service)
		r.SendLagP50, r.SendLagP99 = ms(quantile(t.lags, 0.50)), ms(quantile(t.lags, 0.99))
		r.ServiceP50, r.ServiceP99 = ms(quantile(t.service, 0.50)), ms(quantile(t.service, 0.99))
	}
	return r
}

// quantile is the nearest-rank quantile of sorted latencies.
func quantile(sorted []time.Duration, q float64) time.Duration {
	i := int(float64(len(sorted))*q+0.999999) - 1
	return sorted[min(max(i, 0), len(sorted)-1)]
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// printTable writes results as a table, then the pipeguard/baseline ratios
// of runs that were measured for both.
func printTable(w io.Writer, results []*Result) {
	fmt.Fprintf(w, "%-9s %-11s %5s %4s %9s %8s %7s %6s %8s %8s %8s %8s %7s %5s %8s %8s\n",
		"target", "load", "ns", "pol", "reviews/s", "sent", "dropped", "errors", "p50 ms", "p90 ms", "p99 ms", "max ms",
		"cpu ms", "cores", "RSS MiB", "peak MiB")
	for _, r := range results {
		fmt.Fprintf(w, "%-9s %-11s %5d %4d %9.0f %8d %7d %6d %8.3f %8.3f %8.3f %8.3f %7.3f %5.2f %8.1f %8.1f\n",
			r.Target, load(r), r.Namespaces, r.Policies, r.ReviewsPerSecond, r.Sent, r.Dropped, r.Errors,
			r.P50, r.P90, r.P99, r.Max, r.CPUPerReviewMs, r.CoresUsed, mib(r.RSSBytes), mib(r.PeakRSSBytes))
	}
	for _, r := range results {
		if r.Mode == "open" {
			fmt.Fprintf(w, "%-9s %-11s from send: p50 %.3f ms, p99 %.3f ms; sent late by p50 %.3f ms, p99 %.3f ms\n",
				r.Target, load(r), r.ServiceP50, r.ServiceP99, r.SendLagP50, r.SendLagP99)
		}
	}
	for _, r := range results {
		if r.FirstError != "" {
			fmt.Fprintf(w, "%s %s: %d errors %v; first: %s\n", r.Target, load(r), r.Errors, r.ErrorKinds, r.FirstError)
		}
	}
	fmt.Fprintln(w, "Open-loop latencies count from when a request was due, so they include the sender's lateness; \"from send\"")
	fmt.Fprintln(w, "counts from when it left.")
	fmt.Fprintln(w, "cpu ms: the serving process's CPU time per correct review; cores: its CPU time over wall time. These, RSS and peak")
	fmt.Fprintln(w, "RSS (since the process started) are of the webhook server's own process, or, with --in-process, of the server and the")
	fmt.Fprintln(w, "load generator together.")
	for _, r := range results {
		if r.LoadCoresUsed > 0 {
			fmt.Fprintf(w, "%-9s %-11s load generator used %.2f cores\n", r.Target, load(r), r.LoadCoresUsed)
		}
	}
	printRatios(w, results)
}

func printRatios(w io.Writer, results []*Result) {
	base := map[string]*Result{}
	for _, r := range results {
		if r.Target == TargetBaseline {
			base[load(r)] = r
		}
	}
	header := false
	for _, r := range results {
		b := base[load(r)]
		if r.Target != TargetPipeguard || b == nil || b.ReviewsPerSecond == 0 || b.P99 == 0 {
			continue
		}
		if !header {
			fmt.Fprintln(w, "\npipeguard / baseline:")
			header = true
		}
		cpu := ""
		if r.CPUPerReviewMs > 0 {
			cpu = fmt.Sprintf("   cpu per review %.2fx (saturated throughput by CPU %.1f%%)",
				r.CPUPerReviewMs/b.CPUPerReviewMs, 100*b.CPUPerReviewMs/r.CPUPerReviewMs)
		}
		fmt.Fprintf(w, "  %-11s throughput %5.1f%%   p50 %.2fx   p99 %.2fx%s\n",
			load(r), 100*r.ReviewsPerSecond/b.ReviewsPerSecond, r.P50/b.P50, r.P99/b.P99, cpu)
	}
}

func load(r *Result) string {
	if r.Mode == "closed" {
		return fmt.Sprintf("closed x%d", r.Workers)
	}
	return fmt.Sprintf("%d/s", r.Rate)
}

func mib(b int64) float64 { return float64(b) / (1 << 20) }
