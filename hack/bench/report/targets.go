package main

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/pipeguard/pipeguard/hack/bench/internal/results"
)

// The performance targets pipeguard holds itself to; ratios are to the floor
// (an allow-all webhook served the same way) in the same round. Rego
// decides every review of the pipes mix, and rego stays the source of every
// decision, so the pipes mix's targets are regression bars at what OPA's
// evaluator gives: a change that costs more misses them.
const (
	throughputTarget     = 0.8  // pipeguard saturated reviews/s ÷ the floor's, deployed mix, at least
	cpuTarget            = 1.3  // pipeguard CPU time per review ÷ the floor's, deployed mix, at most
	gatekeeperTarget     = 4.0  // pipeguard saturated reviews/s ÷ OPA Gatekeeper's with the same rule, deployed mix, at least
	regoCPUTarget        = 3.3  // pipeguard CPU time per review ÷ the floor's, pipes mix, at most
	regoGatekeeperTarget = 3.0  // pipeguard saturated reviews/s ÷ Gatekeeper's at its own GOGC, pipes mix, at least
	rssTarget            = 1.4  // pipeguard peak RSS ÷ the floor's, pipes mix (the decision cache full), at most
	scaleTarget          = 2.0  // pipeguard-scale ÷ pipeguard, p50 and peak RSS, at most
	e2eHostPathLimit     = 0.2  // ms pipeguard may add over the floor end to end, pods with a hostPath
	e2ePlainLimit        = 0.1  // ms, pods without one: within the noise
	agentReadTarget1     = 0.85 // gated ÷ ungated calls/s of an agent read, 1 client, at least
	agentReadTarget      = 0.87 // the same, 16 clients
	agentMutatingLimit   = 0.05 // ms a gated mutating call's p50 may exceed the fsync-only agent's by, 1 client
	agentMutatingRatio   = 1.05 // gated ÷ fsync-only p50 of a mutating call, 16 clients, at most
	agentDecisionTarget  = 15.0 // µs per gate decision with an admin policy, repeated inputs, at most
	mountsLinearTarget   = 1.5  // CPU per mount of a review at the bound (1,024 mounts) ÷ at 16 mounts, at most
	reviewHeapTarget     = 256  // MiB of peak Go heap under 16 concurrent maximal reviews (half the Deployment's 512Mi), at most
)

// Metrics of a run.
var (
	rps = func(r *Review) float64 { return r.ReviewsPerSecond }
	cpu = func(r *Review) float64 { return r.CPUPerReviewMs }
	p50 = func(r *Review) float64 { return r.P50 }
	p99 = func(r *Review) float64 { return r.P99 }
	rss = func(r *Review) float64 { return float64(r.PeakRSSBytes) }
)

// targets checks the results against every target: met, missed, or not
// measured.
func targets(w writer, in *Input) {
	w("## Targets\n\n| target | measured | met |\n|---|---|---|\n")
	deployed, pipes := results.InMix(in.Webhook, "deployed"), results.InMix(in.Webhook, "pipes")
	ratios := results.RoundRatios
	judge(w, "deployed mix: pipeguard's CPU time per review ≤ %.1f× the floor's", cpuTarget, ratios(deployed, "pipeguard", "floor", cpu), true)
	judge(w, "deployed mix: pipeguard's saturated throughput ≥ %.1f× the floor's", throughputTarget, ratios(deployed, "pipeguard", "floor", rps), true)
	judge(w, "rego on every review (pipes mix): pipeguard's CPU time per review ≤ %.1f× the floor's", regoCPUTarget, ratios(pipes, "pipeguard", "floor", cpu), true)
	gatekeeperRow(w, pipes, "rego on every review (pipes mix)", regoGatekeeperTarget)
	gatekeeperRow(w, deployed, "deployed mix", gatekeeperTarget)
	judge(w, "pipes mix, every review a decision of its own, so the decision cache is full: pipeguard's peak RSS ≤ %.1f× the floor's", rssTarget, ratios(pipes, "pipeguard", "floor", rss), true)
	judge(w, "10,000 namespaces and 50 policies: p50 latency ≤ %.1f× the default policy's", scaleTarget, ratios(deployed, "pipeguard-scale", "pipeguard", p50), false)
	judge(w, "10,000 namespaces and 50 policies: peak RSS ≤ %.1f× the default policy's", scaleTarget, ratios(deployed, "pipeguard-scale", "pipeguard", rss), false)
	inform(w, "rego on every review (pipes mix): pipeguard's saturated throughput ÷ the floor's (no target: CPU per review is the bar)", ratios(pipes, "pipeguard", "floor", rps))
	endToEnd(w, in)
	reviewCostRows(w, in)
	agentRows(w, in)
	w("\n")
}

// reviewCostRows judges what one review may cost at the bounds, from the
// Go benchmarks: CPU per mount stays flat up to MaxHostPathMounts, and
// concurrent maximal reviews stay within half the Deployment's memory.
func reviewCostRows(w writer, in *Input) {
	label := fmt.Sprintf("review CPU against mounts (a denied pod, rego on every review): CPU per mount at 1,024 mounts (the bound) ≤ %g× at 16", mountsLinearTarget)
	lo, ok1 := goBenchMetric(in.GoBench, "BenchmarkReviewMounts/n=16", "cpu-ns/mount")
	hi, ok2 := goBenchMetric(in.GoBench, "BenchmarkReviewMounts/n=1024", "cpu-ns/mount")
	if ok1 && ok2 && lo > 0 {
		w("| %s | %.2f× (%.1f µs per mount at 1,024, %.1f µs at 16; `BenchmarkReviewMounts`) | %s |\n", label, hi/lo, hi/1000, lo/1000, met(hi/lo <= mountsLinearTarget))
	} else {
		w("| %s | not measured: no BenchmarkReviewMounts in the Go benchmarks | – |\n", label)
	}
	label = fmt.Sprintf("peak Go heap of 16 concurrent maximal reviews (every bound at once, rego on each) ≤ %d MiB", reviewHeapTarget)
	var worst float64
	var seen []string
	for _, shape := range []string{"padded", "long-paths"} {
		v, ok := goBenchMetric(in.GoBench, "BenchmarkReviewMemory/"+shape+"/concurrent=16", "peak-MiB")
		if !ok {
			continue
		}
		worst = max(worst, v)
		at3 := ""
		if v3, ok := goBenchMetric(in.GoBench, "BenchmarkReviewMemory/"+shape+"/concurrent=3", "peak-MiB"); ok {
			at3 = fmt.Sprintf(" (%.0f MiB with 3)", v3)
		}
		seen = append(seen, fmt.Sprintf("%s %.0f MiB%s", shape, v, at3))
	}
	if len(seen) == 0 {
		w("| %s | not measured: no BenchmarkReviewMemory in the Go benchmarks | – |\n", label)
		return
	}
	w("| %s | %s (`BenchmarkReviewMemory`) | %s |\n", label, strings.Join(seen, ", "), met(worst <= reviewHeapTarget))
}

// judge writes the row of the target label, formatted with limit: met by
// the median of the per-round ratios rs when it is at least limit (label
// says ≥) or at most limit. listed shows every round's ratio.
func judge(w writer, label string, limit float64, rs []float64, listed bool) {
	label = fmt.Sprintf(label, limit)
	if len(rs) == 0 {
		w("| %s | not measured | – |\n", label)
		return
	}
	v, rounds := results.Median(rs), ""
	if listed {
		rounds = ": " + list(rs)
	}
	ok := v <= limit
	if strings.Contains(label, "≥") {
		ok = v >= limit
	}
	w("| %s | %.2f× (median of %d rounds%s) | %s |\n", label, v, len(rs), rounds, met(ok))
}

// inform writes the row of a figure that has no target: the median of the
// per-round ratios rs.
func inform(w writer, label string, rs []float64) {
	if len(rs) == 0 {
		w("| %s | not measured | – |\n", label)
		return
	}
	w("| %s | %.2f× (median of %d rounds: %s) | – |\n", label, results.Median(rs), len(rs), list(rs))
}

// agentRows judges the agent's gate and audit: reads against the ungated
// agent, mutating calls against the fsync-only agent (measured in the same
// rounds), and an admin policy's decision on repeated inputs.
func agentRows(w writer, in *Input) {
	readTarget := func(clients int) float64 {
		if clients == 1 {
			return agentReadTarget1
		}
		return agentReadTarget
	}
	readLabel := func(clients int) string {
		return fmt.Sprintf("agent reads (PathExists, %d client%s; each record written before the answer): gated calls/s ≥ %g× ungated", clients, plural(clients), readTarget(clients))
	}
	mutLabel := func(clients int) string {
		limit := fmt.Sprintf("at most %g ms above", agentMutatingLimit)
		if clients > 1 {
			limit = fmt.Sprintf("at most %.2f×", agentMutatingRatio)
		}
		return fmt.Sprintf("agent mutating calls (Mkdir, %d client%s): gated p50 %s the fsync-only agent's (no attribution or gate; each call's write-ahead record fsynced first and its completion record written after, by the same audit log writer)", clients, plural(clients), limit)
	}
	if in.Agent == nil {
		w("| %s | not measured | – |\n| %s | not measured | – |\n", readLabel(1), mutLabel(1))
	} else {
		for _, c := range in.Agent.Cases {
			switch {
			case c.Op == "PathExists":
				w("| %s | %.2f× (median of %d rounds; in all, %s vs %s calls/s, CPU per call %.3f vs %.3f ms) | %s |\n", readLabel(c.Clients), c.Ratio, c.Rounds,
					thousands(c.Gated.CallsPerSecond), thousands(c.Ungated.CallsPerSecond), c.Gated.CPUPerCallMs, c.Ungated.CPUPerCallMs, met(c.Ratio >= readTarget(c.Clients)))
			case c.Op == "Mkdir" && (c.FsyncOnly == nil || c.FsyncOnlyRatio == 0):
				w("| %s | not measured: no fsync-only agent in the results | – |\n", mutLabel(c.Clients))
			case c.Op == "Mkdir":
				ok := c.OverFsyncOnly <= agentMutatingLimit
				if c.Clients > 1 {
					ok = c.FsyncOnlyRatio <= agentMutatingRatio
				}
				w("| %s | gated − fsync-only %.3f ms, gated ÷ fsync-only %.2f× (medians of %d rounds); in all, p50 gated %.3f, fsync-only %.3f, ungated %.3f ms | %s |\n",
					mutLabel(c.Clients), c.OverFsyncOnly, c.FsyncOnlyRatio, c.Rounds, c.Gated.P50, c.FsyncOnly.P50, c.Ungated.P50, met(ok))
			}
		}
	}
	label := fmt.Sprintf("agent admin policy, repeated inputs: a gate decision ≤ %g µs", agentDecisionTarget)
	if v, ok := goBenchNs(in.GoBench, "BenchmarkDecide/allow"); ok {
		w("| %s | %.1f µs (`BenchmarkDecide/allow`, the sample policy) | %s |\n", label, v/1000, met(v/1000 <= agentDecisionTarget))
	} else {
		w("| %s | not measured: no BenchmarkDecide/allow in the Go benchmarks | – |\n", label)
	}
}

// goBenchNs returns the ns/op of benchmark name in the Go benchmark output
// lines.
func goBenchNs(lines []string, name string) (float64, bool) {
	return goBenchMetric(lines, name, "ns/op")
}

// goBenchMetric returns the value of benchmark name's metric unit in the
// Go benchmark output lines.
func goBenchMetric(lines []string, name, unit string) (float64, bool) {
	for _, l := range lines {
		f := strings.Fields(l)
		if i := slices.Index(f, unit); i >= 3 && benchNamed(f[0], name) {
			v, err := strconv.ParseFloat(f[i-1], 64)
			return v, err == nil
		}
	}
	return 0, false
}

// benchNamed reports whether field is benchmark name, with or without the
// -GOMAXPROCS suffix go test adds.
func benchNamed(field, name string) bool {
	procs, ok := strings.CutPrefix(field, name+"-")
	_, err := strconv.Atoi(procs)
	return field == name || ok && err == nil
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}

// endToEnd judges pipeguard's added p50 through kube-apiserver against the
// floor's in the same round, on pods with and without a hostPath, and gives
// every target's added p50 to no admission check for each kind of pod: for
// the denied kind, the time to the denial (the floor admits those pods).
func endToEnd(w writer, in *Input) {
	const e2e = "end to end through kube-apiserver, pods "
	for _, k := range []struct {
		kind, label string
		limit       float64
	}{
		{"hostpath", fmt.Sprintf(e2e+"with hostPath pipe mounts: added p50 ≤ the floor's + %g ms", e2eHostPathLimit), e2eHostPathLimit},
		{"no-hostpath", fmt.Sprintf(e2e+"without a hostPath: no cost beyond the floor's (≤ %g ms)", e2ePlainLimit), e2ePlainLimit},
		{results.KindOrdinaryHostPath, e2e + "with ordinary hostPath volumes only: added p50", 0},
		{results.KindDenied, e2e + "mounting a CSI Proxy pipe without an allowance, denied by every check but the floor: added p50 to the answer", 0},
	} {
		var added []string
		for _, t := range [][2]string{{"pipeguard", "pipeguard"}, {"floor", "floor"}, {"validatingadmissionpolicy", "ValidatingAdmissionPolicy"}, {"gatekeeper", "Gatekeeper"}} {
			v := " not measured"
			if a := results.AddedP50(in.E2E, t[0], "none", k.kind); len(a) > 0 {
				v = fmt.Sprintf(" %.3f ms", results.Median(a))
			}
			added = append(added, t[1]+v)
		}
		rounds, over := len(results.AddedP50(in.E2E, "none", "none", k.kind)), results.AddedP50(in.E2E, "pipeguard", "floor", k.kind)
		switch {
		case rounds == 0 || k.limit > 0 && len(over) == 0:
			w("| %s | not measured | – |\n", k.label)
		case k.limit > 0:
			w("| %s | pipeguard − floor %.3f ms (median of %d rounds); added to no admission check: %s | %s |\n",
				k.label, results.Median(over), len(over), strings.Join(added, ", "), met(results.Median(over) <= k.limit))
		default:
			w("| %s | added to no admission check (medians of %d rounds): %s | – |\n", k.label, rounds, strings.Join(added, ", "))
		}
	}
}

// gatekeeperRow judges pipeguard's saturated throughput on runs against
// OPA Gatekeeper's, deciding the same rule, in the same rounds, as
// Gatekeeper's deployment runs it and at pipeguard's GOGC.
func gatekeeperRow(w writer, runs []*Review, mix string, target float64) {
	label := fmt.Sprintf("%s: pipeguard's saturated throughput ≥ %g× OPA Gatekeeper's with the same rule, at Gatekeeper's own GOGC", mix, target)
	rs := results.RoundRatios(runs, "pipeguard", "gatekeeper", rps)
	if len(rs) == 0 {
		w("| %s | not measured: no round ran both pipeguard and gatekeeper (`make bench` runs them; the gatekeeper target needs Gatekeeper's executable and a control plane) | – |\n", label)
		return
	}
	at400 := "not measured"
	if gs := results.RoundRatios(runs, "pipeguard", "gatekeeper-gogc400", rps); len(gs) > 0 {
		at400 = fmt.Sprintf("%.2f×, Gatekeeper's CPU time per review %.2f× pipeguard's", results.Median(gs), results.Median(results.RoundRatios(runs, "gatekeeper-gogc400", "pipeguard", cpu)))
	}
	w("| %s | %.2f× (median of %d rounds: %s); Gatekeeper's CPU time per review: %.2f× pipeguard's; with Gatekeeper at GOGC=400, as pipeguard runs: %s | %s |\n",
		label, results.Median(rs), len(rs), list(rs), results.Median(results.RoundRatios(runs, "gatekeeper", "pipeguard", cpu)), at400, met(results.Median(rs) >= target))
}

func met(ok bool) string {
	if ok {
		return "met"
	}
	return "**missed**"
}

func list(vs []float64) string {
	var s []string
	for _, v := range vs {
		s = append(s, strconv.FormatFloat(v, 'f', 2, 64))
	}
	return strings.Join(s, ", ")
}
