package main

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/pipeguard/pipeguard/hack/bench/internal/results"
)

// The performance targets pipeguard holds itself to; ratios are to the floor
// (an allow-all webhook served the same way) in the same round.
const (
	throughputTarget = 0.8 // pipeguard saturated reviews/s ÷ the floor's, at least
	cpuTarget        = 1.3 // pipeguard CPU time per review ÷ the floor's, at most
	uncachedTarget   = 0.5 // pipeguard-uncached saturated reviews/s ÷ the floor's, at least
	scaleTarget      = 2.0 // pipeguard-scale ÷ pipeguard, p50 and peak RSS, at most
	gatekeeperTarget = 4.0 // pipeguard saturated reviews/s ÷ OPA Gatekeeper's with the same rule, at least
	e2eHostPathLimit = 0.2 // ms pipeguard may add over the floor end to end, pods with a hostPath
	e2ePlainLimit    = 0.1 // ms, pods without one: within the noise
	benchBudget      = 10 * time.Minute

	agentReadTarget     = 0.87 // gated ÷ ungated calls/s of an agent read, at least
	agentMutatingLimit  = 0.05 // ms a mutating call may add beyond the fsync floor's p50
	agentDecisionTarget = 15.0 // µs per gate decision with an admin policy, repeated inputs, at most
)

// Metrics of a run.
var (
	rps = func(r *Review) float64 { return r.ReviewsPerSecond }
	cpu = func(r *Review) float64 { return r.CPUPerReviewMs }
	p50 = func(r *Review) float64 { return r.P50 }
	p99 = func(r *Review) float64 { return r.P99 }
	rss = func(r *Review) float64 { return float64(r.PeakRSSBytes) }
)

func toFloor(in *Input, target string, m func(*Review) float64) []float64 {
	return results.RoundRatios(in.Webhook, target, "floor", m)
}

// targets checks the results against every target: met, missed, or not
// measured.
func targets(w writer, in *Input, elapsed time.Duration) {
	w("## Targets\n\n| target | measured | met |\n|---|---|---|\n")
	judge(w, fmt.Sprintf("pipeguard: saturated throughput ≥ %.1f× the floor's", throughputTarget),
		toFloor(in, "pipeguard", rps), throughputTarget, true, true)
	judge(w, fmt.Sprintf("pipeguard: CPU time per review ≤ %.1f× the floor's", cpuTarget),
		toFloor(in, "pipeguard", cpu), cpuTarget, false, true)
	judge(w, fmt.Sprintf("pipeguard without its decision cache: saturated throughput ≥ %.1f× the floor's", uncachedTarget),
		toFloor(in, "pipeguard-uncached", rps), uncachedTarget, true, true)
	judge(w, fmt.Sprintf("10,000 namespaces and 50 policies: p50 latency ≤ %.1f× the default policy's", scaleTarget),
		results.RoundRatios(in.Webhook, "pipeguard-scale", "pipeguard", p50), scaleTarget, false, false)
	judge(w, fmt.Sprintf("10,000 namespaces and 50 policies: peak RSS ≤ %.1f× the default policy's", scaleTarget),
		results.RoundRatios(in.Webhook, "pipeguard-scale", "pipeguard", rss), scaleTarget, false, false)
	endToEnd(w, in)
	gatekeeperRow(w, in)
	if elapsed > 0 {
		w("| `make bench` in under %s | %s | %s |\n", benchBudget, elapsed.Round(time.Second), met(elapsed < benchBudget))
	} else {
		w("| `make bench` in under %s | not measured: these results did not come from `make bench` | – |\n", benchBudget)
	}
	agentRows(w, in)
	w("\n")
}

// judge writes the row of a target met by the median of the per-round
// ratios rs: at least limit when atLeast, else at most limit. listed shows
// every round's ratio.
func judge(w writer, label string, rs []float64, limit float64, atLeast, listed bool) {
	if len(rs) == 0 {
		w("| %s | not measured | – |\n", label)
		return
	}
	v, rounds := results.Median(rs), ""
	if listed {
		rounds = ": " + list(rs)
	}
	ok := v <= limit
	if atLeast {
		ok = v >= limit
	}
	w("| %s | %.2f× (median of %d rounds%s) | %s |\n", label, v, len(rs), rounds, met(ok))
}

// agentRows judges the agent's gate and audit: reads against the ungated
// agent in the same run, mutating calls against the fsync floor measured
// in the same run, and an admin policy's decision on repeated inputs.
func agentRows(w writer, in *Input) {
	readLabel := func(clients int) string {
		return fmt.Sprintf("agent reads (PathExists, %d client%s): gated calls/s ≥ %g× ungated", clients, plural(clients), agentReadTarget)
	}
	mutLabel := func(clients int) string {
		return fmt.Sprintf("agent mutating calls (Mkdir, %d client%s): added p50 ≤ the fsync floor's p50 + %g ms", clients, plural(clients), agentMutatingLimit)
	}
	if in.Agent == nil {
		w("| %s | not measured | – |\n| %s | not measured | – |\n", readLabel(1), mutLabel(1))
	} else {
		for _, c := range in.Agent.Cases {
			switch c.Op {
			case "PathExists":
				w("| %s | %.2f× (median of %d rounds; in all, %s vs %s calls/s, CPU per call %.3f vs %.3f ms) | %s |\n", readLabel(c.Clients), c.Ratio, c.Rounds,
					thousands(c.Gated.CallsPerSecond), thousands(c.Ungated.CallsPerSecond), c.Gated.CPUPerCallMs, c.Ungated.CPUPerCallMs, met(c.Ratio >= agentReadTarget))
			case "Mkdir":
				if c.FsyncP50 == 0 {
					w("| %s | not measured: no fsync floor in the results | – |\n", mutLabel(c.Clients))
					continue
				}
				w("| %s | %.3f ms added beyond the fsync floor (median of %d rounds); the fsync-only agent adds %.3f ms; in all, p50 gated %.3f, ungated %.3f, fsync floor %.3f ms | %s |\n",
					mutLabel(c.Clients), c.OverFloor, c.Rounds, c.FsyncOnlyOverFloor, c.Gated.P50, c.Ungated.P50, c.FsyncP50, met(c.OverFloor <= agentMutatingLimit))
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
	for _, l := range lines {
		f := strings.Fields(l)
		if len(f) < 4 || !benchNamed(f[0], name) {
			continue
		}
		for i := 2; i+1 < len(f); i++ {
			if f[i+1] == "ns/op" {
				v, err := strconv.ParseFloat(f[i], 64)
				return v, err == nil
			}
		}
	}
	return 0, false
}

// benchNamed reports whether field is benchmark name, with or without the
// -GOMAXPROCS suffix go test adds.
func benchNamed(field, name string) bool {
	procs, ok := strings.CutPrefix(field, name+"-")
	if !ok {
		return field == name
	}
	_, err := strconv.Atoi(procs)
	return err == nil
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}

// endToEnd judges pipeguard's added p50 through kube-apiserver against the
// floor's in the same round, on pods with and without a hostPath.
func endToEnd(w writer, in *Input) {
	for _, k := range []struct {
		kind, label string
		limit       float64
	}{
		{"hostpath", fmt.Sprintf("end to end through kube-apiserver, pods with hostPath pipe mounts: added p50 ≤ the floor's + %g ms", e2eHostPathLimit), e2eHostPathLimit},
		{"no-hostpath", fmt.Sprintf("end to end through kube-apiserver, pods without a hostPath: no cost beyond the floor's (≤ %g ms)", e2ePlainLimit), e2ePlainLimit},
	} {
		over := results.AddedP50(in.E2E, "pipeguard", "floor", k.kind)
		if len(over) == 0 {
			w("| %s | not measured | – |\n", k.label)
			continue
		}
		added := func(t string) float64 { return results.Median(results.AddedP50(in.E2E, t, "none", k.kind)) }
		w("| %s | pipeguard − floor %.3f ms (median of %d rounds); added to no admission check: pipeguard %.3f ms, floor %.3f ms, ValidatingAdmissionPolicy %.3f ms | %s |\n",
			k.label, results.Median(over), len(over), added("pipeguard"), added("floor"), added("validatingadmissionpolicy"), met(results.Median(over) <= k.limit))
	}
}

// gatekeeperRow judges pipeguard's saturated throughput against OPA
// Gatekeeper's, deciding the same rule, in the same rounds.
func gatekeeperRow(w writer, in *Input) {
	label := fmt.Sprintf("saturated throughput ≥ %g× OPA Gatekeeper's with the same rule", gatekeeperTarget)
	rs := results.RoundRatios(in.Webhook, "pipeguard", "gatekeeper", rps)
	if len(rs) == 0 {
		reason := "no gatekeeper runs in the results (`make bench` runs them; `hack/bench/loadtest --targets pipeguard,gatekeeper` needs Gatekeeper's executable and a control plane)"
		if len(results.Of(in.Webhook, "gatekeeper", rps)) > 0 {
			reason = "no round ran both pipeguard and gatekeeper"
		}
		w("| %s | not measured: %s | – |\n", label, reason)
		return
	}
	cpus := results.RoundRatios(in.Webhook, "gatekeeper", "pipeguard", cpu)
	// The decision cache answers the mix's repeated reviews; without it,
	// rego decides each one, as Gatekeeper's does.
	uncached := ""
	if us := results.RoundRatios(in.Webhook, "pipeguard-uncached", "gatekeeper", rps); len(us) > 0 {
		uncached = fmt.Sprintf("; pipeguard without its decision cache: %.2f×", results.Median(us))
	}
	w("| %s | %.2f× (median of %d rounds: %s); Gatekeeper's CPU time per review: %.2f× pipeguard's%s | %s |\n",
		label, results.Median(rs), len(rs), list(rs), results.Median(cpus), uncached, met(results.Median(rs) >= gatekeeperTarget))
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
