package main

import (
	"fmt"
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
	if in.Agent == nil {
		w("| agent: cost of gate and audit (reported, no target) | not measured | – |\n")
	} else {
		var parts []string
		for _, c := range in.Agent.Cases {
			parts = append(parts, fmt.Sprintf("%s ×%d %s%%", c.Op, c.Clients, signed(c.OverheadPercent)))
		}
		w("| agent: cost of gate and audit (reported, no target) | %s | – |\n", strings.Join(parts, "; "))
	}
	w("\n")
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
