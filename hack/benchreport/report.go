package main

import (
	"bytes"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// The performance targets pipeguard holds itself to.
const (
	throughputTarget = 0.70 // pipeguard / baseline saturated throughput
	p99TargetRate    = 1000 // reviews/s at which p99 is held to p99TargetMs
	scaleTarget      = 2.0  // scale case / small case, latency and RSS
)

// report is the markdown of docs/benchmarks/README.md. elapsed, when
// positive, is the wall time of make bench up to writing the report.
func report(in *Input, elapsed time.Duration) []byte {
	var b bytes.Buffer
	w := func(format string, args ...any) { fmt.Fprintf(&b, format, args...) }
	w("# Benchmarks\n\n")
	w("Written by `make bench` (`hack/benchreport`) from the results of `hack/loadtest` (the admission webhook over HTTPS on\n")
	w("loopback), `hack/agentload` (the node agent over unix sockets) and the Go benchmarks. Run `make bench` to measure\n")
	w("again; the numbers depend on the machine and on what else it runs.\n\n")

	machine(w, in, elapsed)
	targets(w, in)
	w("![p50 and p99 latency of pipeguard and the Go baseline against the offered rate](latency.svg)\n\n")
	webhook(w, in)
	scale(w, in)
	agent(w, in)
	goBench(w, in)
	return b.Bytes()
}

type writer func(format string, args ...any)

func machine(w writer, in *Input, elapsed time.Duration) {
	m := in.Machine
	w("## Machine\n\n| | |\n|---|---|\n")
	w("| CPU | %s |\n", cell(m.CPUModel))
	w("| cores | %d (GOMAXPROCS %d) |\n", m.Cores, m.GOMAXPROCS)
	w("| Go | %s %s/%s |\n", cell(m.GoVersion), cell(m.OS), cell(m.Arch))
	w("| load average before the load runs (1, 5, 15 min) | %s |\n", cell(m.LoadAverage))
	w("| date | %s |\n", cell(m.Date))
	worst, avg, remade := steal(in)
	w("| CPU time stolen by the hypervisor during the webhook runs | %s on average, %s in the worst run |\n", pct(avg/100), pct(worst/100))
	if remade > 0 {
		w("| webhook runs made again because the hypervisor took CPU time, keeping the least disturbed | %d |\n", remade)
	}
	if elapsed > 0 {
		w("| `make bench` up to this report | %s |\n", elapsed.Round(time.Second))
	}
	w("\n")
	if f := strings.Fields(m.LoadAverage); len(f) > 0 && m.Cores > 0 {
		if load, err := strconv.ParseFloat(f[0], 64); err == nil && load > float64(m.Cores)/2 {
			w("The machine was busy with other work when the load runs started (load average %s on %d cores), so the\n", f[0], m.Cores)
			w("absolute numbers, latency percentiles above all, reflect contention; the ratios of runs made side by side, and\n")
			w("CPU time per review, are the more telling.\n\n")
		}
	}
	if worst > stealNote {
		w("The hypervisor took CPU time from this virtual machine during the runs (up to %s of it in one run; each\n", pct(worst/100))
		w("table shows how much per run): runs with much of it measured a slower machine, and their latencies are not\n")
		w("pipeguard's.\n\n")
	}
}

// stealNote is the stolen CPU share above which the report says so, and
// above which a run's throughput, CPU time and memory settle no target.
const stealNote = 5.0

// tailStealLimit is the stolen CPU share above which a run's p99 settles no
// target: p99 is the slowest 1% of its requests, and a hypervisor that took
// 1% of the CPU time may alone have made them slow.
const tailStealLimit = 100 - 99.0

// steal returns the largest and the mean share of CPU time stolen over
// the webhook runs, in percent, and how many runs were made again for it.
func steal(in *Input) (worst, avg float64, remade int) {
	runs := append(append([]*Review{}, in.Webhook...), in.Scale...)
	for _, r := range runs {
		worst = max(worst, r.StealPercent)
		avg += r.StealPercent
		remade += r.Remade
	}
	if len(runs) > 0 {
		avg /= float64(len(runs))
	}
	return worst, avg, remade
}

// targets checks the results against the targets of the issue.
func targets(w writer, in *Input) {
	w("## Targets\n\n| target | measured | met |\n|---|---|---|\n")
	cores := ""
	if in.Machine.Cores != 2 {
		cores = fmt.Sprintf(" (the target is for 2 cores; this machine has %d)", in.Machine.Cores)
	}
	for _, t := range pipeguardTargets {
		pg, base := saturated(in.Webhook, t.name)
		if pg == nil && t.name != "pipeguard" {
			continue // the uncached target is optional
		}
		if pg != nil && base != nil && base.ReviewsPerSecond > 0 {
			ratio := pg.ReviewsPerSecond / base.ReviewsPerSecond
			byCPU := ""
			if pg.CPUPerReviewMs > 0 {
				byCPU = fmt.Sprintf("; by server CPU per review %s", pct(base.CPUPerReviewMs/pg.CPUPerReviewMs))
			}
			w("| %s: saturated throughput ≥ %s of the Go baseline's | %s (%s against %s reviews/s, closed loop with %d workers%s) | %s |\n",
				t.label, pct(throughputTarget), pct(ratio), num0(pg.ReviewsPerSecond), num0(base.ReviewsPerSecond), pg.Workers, byCPU, metByRatio(ratio >= throughputTarget, stealNote, pg, base))
		} else {
			w("| %s: saturated throughput ≥ %s of the Go baseline's | not measured | – |\n", t.label, pct(throughputTarget))
		}
		if pg := find(in.Webhook, t.name, "open", p99TargetRate); pg != nil {
			also := ""
			verdict := metBy(pg.P99 <= p99TargetMs, tailStealLimit, pg)
			if b := find(in.Webhook, "baseline", "open", p99TargetRate); b != nil {
				also = fmt.Sprintf("; baseline %s ms", ms(b.P99))
				if pg.P99 > p99TargetMs && b.P99 > p99TargetMs && pg.StealPercent <= tailStealLimit {
					// The control missed too: the machine could not
					// serve plain Go within the target at the time.
					verdict = "**not settled**: the Go baseline missed it too, so the machine could not meet it at the time; run `make bench` again"
				}
			}
			w("| %s: p99 ≤ %s ms at %s reviews/s | %s ms (from send %s ms%s)%s | %s |\n",
				t.label, trimFloat(p99TargetMs), thousands(p99TargetRate), ms(pg.P99), ms(pg.ServiceP99), also, cores, verdict)
		} else {
			w("| %s: p99 ≤ %s ms at %s reviews/s | not measured | – |\n", t.label, trimFloat(p99TargetMs), thousands(p99TargetRate))
		}
	}
	pairs := scalePairs(in)
	if len(pairs) == 0 {
		w("| many namespaces and policies: latency and RSS within %s× of the small case | not measured | – |\n", trimFloat(scaleTarget))
	}
	for _, t := range pipeguardTargets {
		var lat, rss []string
		var runs []*Review
		latOK, rssOK := true, true
		for _, p := range pairs {
			if p.big.Target != t.name {
				continue
			}
			runs = append(runs, p.big, p.small)
			l50, l99, r := p.ratios()
			lat = append(lat, fmt.Sprintf("%s p50 %s×, p99 %s×", loadOf(p.big), x2(l50), x2(l99)))
			rss = append(rss, fmt.Sprintf("%s %s×", loadOf(p.big), x2(r)))
			pLat, pRSS := p.within()
			latOK, rssOK = latOK && pLat, rssOK && pRSS
		}
		if len(runs) == 0 {
			continue
		}
		big := runs[0]
		w("| %s, %s namespaces, %d policies: review latency within %s× of the small case | %s | %s |\n",
			t.label, thousands(big.Namespaces), big.Policies, trimFloat(scaleTarget), strings.Join(lat, "; "), metByRatio(latOK, tailStealLimit, runs...))
		w("| %s, %s namespaces, %d policies: peak RSS within %s× of the small case | %s | %s |\n",
			t.label, thousands(big.Namespaces), big.Policies, trimFloat(scaleTarget), strings.Join(rss, "; "), metByRatio(rssOK, stealNote, runs...))
	}
	if in.Agent != nil {
		var parts []string
		for _, c := range in.Agent.Cases {
			parts = append(parts, fmt.Sprintf("%s ×%d %s%%", c.Op, c.Clients, signed(c.OverheadPercent)))
		}
		w("| agent: cost of gate and audit (reported, no target) | %s | – |\n", strings.Join(parts, "; "))
	}
	w("\nThroughput and latency ratios are pipeguard over the baseline (or the large case over the small one) measured in\n")
	w("the same run. On a machine shared with other work, throughput follows the CPU the server gets; the server's CPU time\n")
	w("per review hardly does, so its ratio is shown beside the throughput ratio. A target is not settled when a run it\n")
	w("depends on lost more than %s of the CPU time to the hypervisor (%s for a latency target: p99 is the slowest 1%% of the\n", pct(stealNote/100), pct(tailStealLimit/100))
	w("requests, and that much stolen time may alone have made them slow), or, for latency, when the Go baseline missed it\n")
	w("in the same run: such runs measured the machine rather than pipeguard.\n\n")
}

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
	w("`hack/loadtest` sends AdmissionReviews over HTTPS on loopback to the controller-runtime webhook server that\n")
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

func agent(w writer, in *Input) {
	a := in.Agent
	if a == nil {
		return
	}
	w("## Agent\n\n")
	w("`hack/agentload` calls filesystem v1 PathExists (a read) and Mkdir (a mutating call; each makes a new directory)\n")
	w("through real unix sockets, each client on its own connection, on two agents in processes of their own: one that\n")
	w("gates and audits every request as pipeguard-agent does (the shipped rules, Metadata level, default durability: a\n")
	w("mutating call's write-ahead record is synced before it runs), with its audit log on %s, and one with neither.\n", cell(a.AuditFilesystem))
	w("The load alternates between them every %s ms, so both see the same machine.\n\n", trimFloat(a.SliceMs))
	w("| op | clients | agent | calls/s | p50 ms | p90 ms | p99 ms | max ms | errors | agent CPU ms/call | RSS MiB | peak RSS MiB |\n")
	w("|---|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n")
	for _, c := range a.Cases {
		for _, v := range []struct {
			name string
			s    *AgentStats
		}{{"ungated", c.Ungated}, {"gated + audited", c.Gated}} {
			w("| %s | %d | %s | %s | %s | %s | %s | %s | %d | %s | %s | %s |\n", cell(c.Op), c.Clients, v.name,
				num0(v.s.CallsPerSecond), ms(v.s.P50), ms(v.s.P90), ms(v.s.P99), ms(v.s.Max), v.s.Errors,
				ms(v.s.CPUPerCallMs), mib(v.s.RSSBytes), mib(v.s.PeakRSSBytes))
		}
	}
	w("\n| op | clients | gated calls/s / ungated | overhead | p99 gated / ungated |\n|---|---:|---:|---:|---:|\n")
	for _, c := range a.Cases {
		w("| %s | %d | %s | %s%% | %s× |\n", cell(c.Op), c.Clients, pct(ratio(c.Gated.CallsPerSecond, c.Ungated.CallsPerSecond)),
			signed(c.OverheadPercent), x2(c.P99Ratio))
	}
	w("\nOverhead: how much longer the gated agent takes for the same calls, (ungated calls/s ÷ gated calls/s − 1) × 100.\n\n")
}

func goBench(w writer, in *Input) {
	if len(in.GoBench) == 0 {
		return
	}
	w("## Go benchmarks\n\n")
	w("`make bench-go`: the admission path, the rego engine, the handler of each target for each kind of request, and the\n")
	w("agent (BenchmarkGuardOverhead compares gated and ungated agents in one process), on one core.\n\n")
	w("<details><summary>go test -bench output</summary>\n\n```text\n")
	for _, l := range in.GoBench {
		w("%s\n", l)
	}
	w("```\n\n</details>\n")
}

// pipeguardTargets are the targets compared with the baseline: pipeguard
// as deployed, and, when measured, pipeguard with rego deciding every
// review.
var pipeguardTargets = []struct{ name, label string }{
	{"pipeguard", "pipeguard"},
	{"pipeguard-uncached", "pipeguard without its decision cache"},
}

// saturated returns the closed-loop runs of target and the baseline with
// the most workers both were measured with.
func saturated(runs []*Review, target string) (pg, base *Review) {
	for _, r := range runs {
		if r.Mode != "closed" || r.Target != target {
			continue
		}
		if b := findLoad(runs, "baseline", r); b != nil && (pg == nil || r.Workers > pg.Workers) {
			pg, base = r, b
		}
	}
	return pg, base
}

func find(runs []*Review, target, mode string, rate int) *Review {
	for _, r := range runs {
		if r.Target == target && r.Mode == mode && (mode == "closed" || r.Rate == rate) {
			return r
		}
	}
	return nil
}

// findLoad finds the run of target under the same load as like.
func findLoad(runs []*Review, target string, like *Review) *Review {
	for _, r := range runs {
		if sameLoad(r, target, like) {
			return r
		}
	}
	return nil
}

// sameLoad reports whether r is a run of target at the load of like.
func sameLoad(r *Review, target string, like *Review) bool {
	return r.Target == target && r.Mode == like.Mode && r.Rate == like.Rate && r.Workers == like.Workers
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

func ratio(a, b float64) float64 {
	if b == 0 {
		return 0
	}
	return a / b
}

func met(ok bool) string {
	if ok {
		return "yes"
	}
	return "**no**"
}

// metBy is met for a target that a run meets by its own numbers: missed
// while the hypervisor took more than limit percent of the CPU time during
// the run, it is not settled either way, since the run measured a slower
// machine.
func metBy(ok bool, limit float64, run *Review) string {
	if ok {
		return met(ok)
	}
	return metByRatio(false, limit, run)
}

// metByRatio is met for a target on the ratio of runs: if the hypervisor
// took more than limit percent of the CPU time during any of them, the
// ratio compares different machines and settles nothing, met or missed.
func metByRatio(ok bool, limit float64, runs ...*Review) string {
	worst := 0.0
	for _, r := range runs {
		if r != nil {
			worst = max(worst, r.StealPercent)
		}
	}
	if worst <= limit {
		return met(ok)
	}
	return fmt.Sprintf("**not settled**: the hypervisor took %s of the CPU time in a run compared; run `make bench` again", pct(worst/100))
}

func ms(v float64) string   { return strconv.FormatFloat(v, 'f', 3, 64) }
func x2(v float64) string   { return strconv.FormatFloat(v, 'f', 2, 64) }
func pct(v float64) string  { return strconv.FormatFloat(v*100, 'f', 1, 64) + "%" }
func num0(v float64) string { return thousands(int(v + 0.5)) }
func mib(b int64) string    { return strconv.FormatFloat(float64(b)/(1<<20), 'f', 1, 64) }

func signed(v float64) string {
	s := strconv.FormatFloat(v, 'f', 1, 64)
	if v >= 0 {
		s = "+" + s
	}
	return s
}

// thousands writes n with commas between groups of three digits.
func thousands(n int) string {
	s := strconv.Itoa(n)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	if neg {
		s = "-" + s
	}
	return s
}

// cell makes s safe inside a markdown table cell.
func cell(s string) string {
	if s == "" {
		return "unknown"
	}
	return strings.NewReplacer("|", `\|`, "\n", " ").Replace(s)
}
