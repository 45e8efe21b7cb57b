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

func of(in *Input, target string, m func(*Review) float64) []float64 {
	return results.Of(in.Webhook, target, m)
}

func toFloor(in *Input, target string, m func(*Review) float64) []float64 {
	return results.RoundRatios(in.Webhook, target, "floor", m)
}

func median(vs []float64) float64 { return results.Median(vs) }

// targets checks the results against every target: met, missed, or not
// measured.
func targets(w writer, in *Input, elapsed time.Duration) {
	w("## Targets\n\n| target | measured | met |\n|---|---|---|\n")
	ratio := func(label, target string, m func(*Review) float64, limit float64, atLeast bool) {
		rs := toFloor(in, target, m)
		if len(rs) == 0 {
			w("| %s | not measured | – |\n", label)
			return
		}
		v := median(rs)
		ok := v <= limit
		if atLeast {
			ok = v >= limit
		}
		w("| %s | %s× (median of %d rounds: %s) | %s |\n", label, x2(v), len(rs), list(rs), met(ok))
	}
	ratio(fmt.Sprintf("pipeguard: saturated throughput ≥ %s× the floor's", x1(throughputTarget)), "pipeguard", rps, throughputTarget, true)
	ratio(fmt.Sprintf("pipeguard: CPU time per review ≤ %s× the floor's", x1(cpuTarget)), "pipeguard", cpu, cpuTarget, false)
	ratio(fmt.Sprintf("pipeguard without its decision cache: saturated throughput ≥ %s× the floor's", x1(uncachedTarget)), "pipeguard-uncached", rps, uncachedTarget, true)
	for _, m := range []struct {
		name string
		f    func(*Review) float64
	}{{"p50 latency", p50}, {"peak RSS", rss}} {
		rs := results.RoundRatios(in.Webhook, "pipeguard-scale", "pipeguard", m.f)
		label := fmt.Sprintf("10,000 namespaces and 50 policies: %s ≤ %s× the default policy's", m.name, x1(scaleTarget))
		if len(rs) == 0 {
			w("| %s | not measured | – |\n", label)
			continue
		}
		w("| %s | %s× (median of %d rounds) | %s |\n", label, x2(median(rs)), len(rs), met(median(rs) <= scaleTarget))
	}
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

// agentRows judges the agent's gate and audit: reads against the ungated
// agent in the same run, mutating calls against the fsync floor measured
// in the same run, and an admin policy's decision on repeated inputs.
func agentRows(w writer, in *Input) {
	readLabel := func(clients int) string {
		return fmt.Sprintf("agent reads (PathExists, %d client%s): gated calls/s ≥ %s× ungated", clients, plural(clients), trimFloat(agentReadTarget))
	}
	mutLabel := func(clients int) string {
		return fmt.Sprintf("agent mutating calls (Mkdir, %d client%s): added p50 ≤ the fsync floor's p50 + %s ms", clients, plural(clients), trimFloat(agentMutatingLimit))
	}
	if in.Agent == nil {
		w("| %s | not measured | – |\n| %s | not measured | – |\n", readLabel(1), mutLabel(1))
	} else {
		for _, c := range in.Agent.Cases {
			switch c.Op {
			case "PathExists":
				r := c.Gated.CallsPerSecond / c.Ungated.CallsPerSecond
				w("| %s | %s× (%s vs %s calls/s; CPU per call %s vs %s ms) | %s |\n", readLabel(c.Clients), x2(r),
					num0(c.Gated.CallsPerSecond), num0(c.Ungated.CallsPerSecond), ms(c.Gated.CPUPerCallMs), ms(c.Ungated.CPUPerCallMs), met(r >= agentReadTarget))
			case "Mkdir":
				if c.FsyncP50 == 0 {
					w("| %s | not measured: no fsync floor in the results | – |\n", mutLabel(c.Clients))
					continue
				}
				added := c.Gated.P50 - c.Ungated.P50
				w("| %s | added %s ms, fsync floor %s ms (p50 gated %s, ungated %s ms) | %s |\n", mutLabel(c.Clients), ms(added), ms(c.FsyncP50),
					ms(c.Gated.P50), ms(c.Ungated.P50), met(added <= c.FsyncP50+agentMutatingLimit))
			}
		}
	}
	label := fmt.Sprintf("agent admin policy, repeated inputs: a gate decision ≤ %s µs", trimFloat(agentDecisionTarget))
	if v, ok := goBenchNs(in.GoBench, "BenchmarkDecide/allow"); ok {
		w("| %s | %.1f µs (`BenchmarkDecide/allow`, the sample policy) | %s |\n", label, v/1000, met(v/1000 <= agentDecisionTarget))
	} else {
		w("| %s | not measured: no BenchmarkDecide/allow in the Go benchmarks | – |\n", label)
	}
}

// goBenchNs returns the ns/op of benchmark name (with or without its -N
// suffix) in the Go benchmark output lines.
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
		{"hostpath", fmt.Sprintf("end to end through kube-apiserver, pods with hostPath pipe mounts: added p50 ≤ the floor's + %s ms", trimFloat(e2eHostPathLimit)), e2eHostPathLimit},
		{"no-hostpath", fmt.Sprintf("end to end through kube-apiserver, pods without a hostPath: no cost beyond the floor's (≤ %s ms)", trimFloat(e2ePlainLimit)), e2ePlainLimit},
	} {
		over := results.AddedP50(in.E2E, "pipeguard", "floor", k.kind)
		if len(over) == 0 {
			w("| %s | not measured | – |\n", k.label)
			continue
		}
		added := func(t string) string { return ms(median(results.AddedP50(in.E2E, t, "none", k.kind))) }
		w("| %s | pipeguard − floor %s ms (median of %d rounds); added to no admission check: pipeguard %s ms, floor %s ms, ValidatingAdmissionPolicy %s ms | %s |\n",
			k.label, ms(median(over)), len(over), added("pipeguard"), added("floor"), added("validatingadmissionpolicy"), met(median(over) <= k.limit))
	}
}

// gatekeeperRow judges pipeguard's saturated throughput against OPA
// Gatekeeper's, deciding the same rule, in the same rounds.
func gatekeeperRow(w writer, in *Input) {
	label := fmt.Sprintf("saturated throughput ≥ %s× OPA Gatekeeper's with the same rule", trimFloat(gatekeeperTarget))
	rs := results.RoundRatios(in.Webhook, "pipeguard", "gatekeeper", rps)
	if len(rs) == 0 {
		reason := "no gatekeeper runs in the results (`make bench` runs them; `hack/bench/loadtest --targets pipeguard,gatekeeper` needs Gatekeeper's executable and a control plane)"
		if len(of(in, "gatekeeper", rps)) > 0 {
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
		uncached = fmt.Sprintf("; pipeguard without its decision cache: %s×", x2(median(us)))
	}
	w("| %s | %s× (median of %d rounds: %s); Gatekeeper's CPU time per review: %s× pipeguard's%s | %s |\n",
		label, x2(median(rs)), len(rs), list(rs), x2(median(cpus)), uncached, met(median(rs) >= gatekeeperTarget))
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
		s = append(s, x2(v))
	}
	return strings.Join(s, ", ")
}
