package main

import (
	"fmt"
)

func webhook(w writer, in *Input) {
	var open, closed []*Review
	for _, r := range in.Webhook {
		if r.Mode == "open" {
			open = append(open, r)
		} else {
			closed = append(closed, r)
		}
	}
	server := "in a process of its own, started afresh for each run"
	for _, r := range in.Webhook {
		if r.Server == "in-process" {
			server = "in the load generator's process"
		}
	}
	w("## Webhook\n\n")
	w("`hack/bench/loadtest` sends AdmissionReviews over HTTPS on loopback to the controller-runtime webhook server that\n")
	w("pipeguard-webhook runs, %s. The mix: pods and Deployments without a host path, a log\n", server)
	w("shipper mounting a host directory, CSI node pods allowed as HostProcess or by their namespace's label, and pods and\n")
	w("Deployments that must be denied; every answer is checked. The baseline is pipeguard's default rule written in Go\n")
	w("behind the same handler. `pipeguard` runs as pipeguard-webhook does, with its decision cache: requests of the\n")
	w("same kind to the same namespace present the same facts, and after the first the decision comes from the cache.\n")
	w("`pipeguard-uncached` turns the cache off, so rego decides every review with a pipe mount; its difference from\n")
	w("the baseline is the whole cost of rego.\n\n")
	if len(open) > 0 {
		w("### Open loop\n\n")
		w("Requests are sent at a fixed rate whatever the answers; latencies count from when each was due, so they include\n")
		w("the sender's own lateness (shown), and a request due while too many are outstanding (256 by default) is dropped.\n\n")
		w("| rate/s | target | reviews/s | p50 ms | p90 ms | p99 ms | max ms | p99 from send ms | sent late p99 ms | dropped | errors | server CPU ms/review | RSS MiB | peak RSS MiB | CPU stolen |\n")
		w("|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n")
		for _, r := range open {
			w("| %s | %s | %s | %s | %s | %s | %s | %s | %s | %d | %d | %s | %s | %s | %s |\n",
				thousands(r.Rate), cell(r.Target), num0(r.ReviewsPerSecond), ms(r.P50), ms(r.P90), ms(r.P99), ms(r.Max),
				ms(r.ServiceP99), ms(r.SendLagP99), r.Dropped, r.Errors, ms(r.CPUPerReviewMs), mib(r.RSSBytes), mib(r.PeakRSSBytes), pct(r.StealPercent/100))
		}
		w("\n")
	}
	if len(closed) > 0 {
		w("### Closed loop (saturation)\n\n")
		w("Each worker sends its next request as soon as the previous one is answered.\n\n")
		w("| workers | target | reviews/s | p50 ms | p90 ms | p99 ms | max ms | errors | server cores | load generator cores | server CPU ms/review | RSS MiB | peak RSS MiB | CPU stolen |\n")
		w("|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n")
		for _, r := range closed {
			w("| %d | %s | %s | %s | %s | %s | %s | %d | %s | %s | %s | %s | %s | %s |\n",
				r.Workers, cell(r.Target), num0(r.ReviewsPerSecond), ms(r.P50), ms(r.P90), ms(r.P99), ms(r.Max), r.Errors,
				x2(r.CoresUsed), x2(r.LoadCoresUsed), ms(r.CPUPerReviewMs), mib(r.RSSBytes), mib(r.PeakRSSBytes), pct(r.StealPercent/100))
		}
		w("\n")
	}
	for _, t := range pipeguardTargets {
		header := false
		for _, pg := range in.Webhook {
			if pg.Target != t.name {
				continue
			}
			b := findLoad(in.Webhook, "baseline", pg)
			if b == nil {
				continue
			}
			if !header {
				w("### %s / baseline\n\n| load | throughput | p50 | p99 | server CPU per review |\n|---|---:|---:|---:|---:|\n", t.name)
				header = true
			}
			w("| %s | %s | %s× | %s× | %s× |\n", loadOf(pg), pct(ratio(pg.ReviewsPerSecond, b.ReviewsPerSecond)),
				x2(ratio(pg.P50, b.P50)), x2(ratio(pg.P99, b.P99)), x2(ratio(pg.CPUPerReviewMs, b.CPUPerReviewMs)))
		}
		if header {
			w("\n")
		}
	}
}

// scalePair is a run of the scale case and the small-case run of the same
// load; adjacent when the small case was measured just before it
// (loadtest --small-first) rather than among the webhook runs.
type scalePair struct {
	small, big *Review
	adjacent   bool
}

// ratios returns the large case's p50, p99 and peak RSS over the small
// case's.
func (p scalePair) ratios() (p50, p99, rss float64) {
	return ratio(p.big.P50, p.small.P50), ratio(p.big.P99, p.small.P99),
		ratio(float64(p.big.PeakRSSBytes), float64(p.small.PeakRSSBytes))
}

// within reports whether the pair's latency and its peak RSS are within
// scaleTarget of the small case.
func (p scalePair) within() (latency, rss bool) {
	l50, l99, r := p.ratios()
	return l50 <= scaleTarget && l99 <= scaleTarget, r <= scaleTarget
}

// verdict judges latency and RSS together, each settled as in the targets
// table: missed if either is missed in runs that settle it, met if both
// are met in such runs, and otherwise not settled.
func (p scalePair) verdict() string {
	latOK, rssOK := p.within()
	lat := metByRatio(latOK, tailStealLimit, p.big, p.small)
	rss := metByRatio(rssOK, stealNote, p.big, p.small)
	switch {
	case lat == met(false) || rss == met(false):
		return met(false)
	case lat != met(true):
		return lat
	}
	return rss
}

// scalePairs pairs each scale run with the small case of the same load:
// the run made just before it, if that is one, or else the webhook run.
func scalePairs(in *Input) []scalePair {
	var out []scalePair
	for i, big := range in.Scale {
		if big.Target == "baseline" || i+1 < len(in.Scale) && smallerAtSameLoad(big, in.Scale[i+1]) {
			continue
		}
		p := scalePair{big: big}
		if i > 0 && smallerAtSameLoad(in.Scale[i-1], big) {
			p.small, p.adjacent = in.Scale[i-1], true
		} else {
			p.small = findLoad(in.Webhook, big.Target, big)
		}
		if p.small != nil {
			out = append(out, p)
		}
	}
	return out
}

// smallerAtSameLoad reports whether a is a run of the same target and load
// as b, with fewer namespaces or policies.
func smallerAtSameLoad(a, b *Review) bool {
	return sameLoad(a, b.Target, b) && a.Namespaces <= b.Namespaces && a.Policies <= b.Policies && (a.Namespaces < b.Namespaces || a.Policies < b.Policies)
}

func scale(w writer, in *Input) {
	pairs := scalePairs(in)
	if len(pairs) == 0 {
		return
	}
	w("## Scale\n\n")
	w("pipeguard with %s labelled namespaces in its namespace cache and %d PipeAccessPolicies, against the small case (%d\n",
		thousands(pairs[0].big.Namespaces), pairs[0].big.Policies, pairs[0].small.Namespaces)
	adjacent := 0
	for _, p := range pairs {
		if p.adjacent {
			adjacent++
		}
	}
	switch adjacent {
	case len(pairs):
		w("namespaces, %s) at the same load, measured just before it so that both meet the same conditions.\n\n", policies(pairs[0].small.Policies))
	case 0:
		w("namespaces, %s) of the webhook runs above, at the same load.\n\n", policies(pairs[0].small.Policies))
	default:
		w("namespaces, %s) at the same load, measured just before it where the scale runs hold such a run, and otherwise\n", policies(pairs[0].small.Policies))
		w("among the webhook runs above.\n\n")
	}
	w("| target | load | namespaces | policies | reviews/s | p50 ms | p99 ms | max ms | errors | server CPU ms/review | RSS MiB | peak RSS MiB | CPU stolen |\n")
	w("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n")
	for _, p := range pairs {
		for _, r := range []*Review{p.small, p.big} {
			w("| %s | %s | %s | %d | %s | %s | %s | %s | %d | %s | %s | %s | %s |\n", cell(r.Target), loadOf(r), thousands(r.Namespaces), r.Policies,
				num0(r.ReviewsPerSecond), ms(r.P50), ms(r.P99), ms(r.Max), r.Errors, ms(r.CPUPerReviewMs), mib(r.RSSBytes), mib(r.PeakRSSBytes), pct(r.StealPercent/100))
		}
	}
	w("\n| target | load | p50 | p99 | throughput | server CPU per review | peak RSS | within %s× |\n|---|---|---:|---:|---:|---:|---:|---|\n", trimFloat(scaleTarget))
	for _, p := range pairs {
		l50, l99, rss := p.ratios()
		w("| %s | %s | %s× | %s× | %s× | %s× | %s× | %s |\n", cell(p.big.Target), loadOf(p.big), x2(l50), x2(l99),
			x2(ratio(p.big.ReviewsPerSecond, p.small.ReviewsPerSecond)), x2(ratio(p.big.CPUPerReviewMs, p.small.CPUPerReviewMs)),
			x2(rss), p.verdict())
	}
	w("\n")
}

func loadOf(r *Review) string {
	if r.Mode == "closed" {
		return fmt.Sprintf("closed loop, %d workers", r.Workers)
	}
	return thousands(r.Rate) + "/s"
}

func policies(n int) string {
	if n == 0 {
		return "the built-in default policy"
	}
	return fmt.Sprintf("%d policies", n)
}
