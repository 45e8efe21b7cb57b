package main

import (
	"bytes"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/pipeguard/pipeguard/hack/bench/internal/results"
)

// report is the markdown of docs/benchmarks/README.md. elapsed, when
// positive, is the wall time of make bench up to writing the report.
func report(in *Input, elapsed time.Duration) []byte {
	var b bytes.Buffer
	w := func(format string, args ...any) { fmt.Fprintf(&b, format, args...) }
	w("# Benchmarks\n\n")
	w("Written by `make bench` (`hack/bench/report`) from the results of `hack/bench/loadtest` (the admission webhook over HTTPS on\n")
	w("loopback), `hack/bench/agentload` (the node agent over unix sockets) and the Go benchmarks; [method.md](method.md) says\n")
	w("how they measure. Run `make bench` to measure again; the numbers depend on the machine and on what else it runs.\n\n")

	machine(w, in, elapsed)
	targets(w, in)
	webhook(w, in)
	gatekeeperRule(w, in)
	endToEndRuns(w, in)
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
	if elapsed > 0 {
		w("| `make bench` up to this report | %s |\n", elapsed.Round(time.Second))
	}
	w("\n")
	if f := strings.Fields(m.LoadAverage); len(f) > 0 && m.Cores > 0 {
		if load, err := strconv.ParseFloat(f[0], 64); err == nil && load > float64(m.Cores)/2 {
			w("The machine was busy with other work when the load runs started (load average %s on %d cores): absolute\n", f[0], m.Cores)
			w("numbers reflect contention; the ratios to the floor measured in the same rounds are the more telling.\n\n")
		}
	}
}

// mixTitles say what each mix of reviews is, for the webhook section.
var mixTitles = map[string]string{
	"deployed": "As deployed: mostly pods and Deployments without a host path, then CSI node pods allowed or denied, and a log shipper; pipeguard's decision cache answers most reviews with a pipe",
	"pipes":    "The reviews with a pipe mount alone, each unique, so rego decides every one",
	"denials":  "The pods and Deployments that must be denied alone, each unique",
}

func webhook(w writer, in *Input) {
	if len(in.Webhook) == 0 {
		return
	}
	w("## Webhook\n\n[How it is measured](method.md#the-webhook): %d workers, reviews of %s bytes on average. `floor` allows every\n", in.Webhook[0].Workers, thousands(float64(in.Webhook[0].ReviewBytes)))
	w("review without reading it; `pipeguard` runs as deployed; `pipeguard-scale` has 10,000 namespaces and 50 policies.\n")
	if len(results.Of(in.Webhook, "gatekeeper", rps)) > 0 {
		w("`gatekeeper` is OPA Gatekeeper deciding the same rule (below) at Go's default GOGC; `gatekeeper-gogc400` at GOGC=400.\n")
	}
	for _, mix := range []string{"deployed", "pipes", "denials"} {
		runs := results.InMix(in.Webhook, mix)
		if len(runs) == 0 {
			continue
		}
		w("\n### The %s mix\n\n%s.\n\n", mix, mixTitles[mix])
		w("| target | rounds | server CPU µs/review | CPU ÷ floor | reviews/s | reviews/s ÷ floor | p50 ms | p99 ms | peak RSS MiB | errors |\n")
		w("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n")
		var seen []string
		for _, r := range runs {
			t := r.Target
			if slices.Contains(seen, t) {
				continue
			}
			seen = append(seen, t)
			errs := 0.0
			for _, e := range results.Of(runs, t, func(r *Review) float64 { return float64(r.Errors) }) {
				errs += e
			}
			median := func(m func(*Review) float64) float64 { return results.Median(results.Of(runs, t, m)) }
			toFloor := func(m func(*Review) float64) float64 { return results.Median(results.RoundRatios(runs, t, "floor", m)) }
			w("| %s | %d | %.1f | %.2f× | %s | %.2f× | %.3f | %.3f | %.1f | %d |\n", cell(t), len(results.Of(runs, t, rps)),
				1000*median(cpu), toFloor(cpu), thousands(median(rps)), toFloor(rps), median(p50), median(p99), median(rss)/(1<<20), int(errs))
		}
	}
	w("\nMedians over the rounds; the ratios are the medians of each round's ratio to the floor of the same round and mix.\n\n")
}

// gatekeeperRule shows the rule Gatekeeper decided beside pipeguard's.
func gatekeeperRule(w writer, in *Input) {
	if len(results.Of(in.Webhook, "gatekeeper", rps)) == 0 {
		return
	}
	w("## OPA Gatekeeper\n\n")
	gk := in.Gatekeeper
	if gk == nil {
		w("The results hold gatekeeper runs but not what they ran (gatekeeper.json, from `hack/bench/loadtest --gatekeeper-json`).\n\n")
		return
	}
	w("OPA Gatekeeper %s, run as [the Gatekeeper peer](method.md#the-gatekeeper-peer) says, with a Constraint matching\n", gk.Version)
	w("%s, this command line\n\n```\ngatekeeper %s\n```\n\n", strings.Join(gk.Kinds, ", "), strings.Join(gk.Args, " "))
	w("and pipeguard's default rule (`rego/admission.rego` and `policy/defaults.go`) as this ConstraintTemplate's rego:\n\n")
	w("```rego\n%s\n```\n\n", strings.TrimRight(gk.Rego, "\n"))
}

// podKindTitles name the kinds of pods in the end-to-end table.
var podKindTitles = map[string]string{
	"hostpath":                   "hostPath pipe pods",
	"no-hostpath":                "pods without hostPath",
	results.KindOrdinaryHostPath: "ordinary hostPath pods",
	results.KindDenied:           "denied pipe pods",
}

func endToEndRuns(w writer, in *Input) {
	if len(in.E2E) == 0 {
		return
	}
	w("## End to end\n\n[Pods created through kube-apiserver](method.md#end-to-end) in each admission check's namespaces; added p50:\n")
	w("the median over rounds of the difference to the namespace no admission check covers. Denied pipe pods are refused\n")
	w("by every check but the floor (their p50 is the time to the denial).\n\n")
	kinds := append(slices.Clone(results.PodKinds), results.KindDenied)
	w("| admission check |")
	for _, kind := range kinds {
		w(" %s p50 ms | added ms |", podKindTitles[kind])
	}
	w("\n|---|%s\n", strings.Repeat("---:|---:|", len(kinds)))
	for _, t := range []string{"none", "floor", "pipeguard", "validatingadmissionpolicy", "gatekeeper"} {
		w("| %s", t)
		for _, kind := range kinds {
			var p50s []float64
			for _, r := range in.E2E {
				if r.Target == t && r.Kind == kind {
					p50s = append(p50s, r.P50)
				}
			}
			if len(p50s) == 0 {
				w(" | – | –")
				continue
			}
			w(" | %.3f | %.3f", results.Median(p50s), results.Median(results.AddedP50(in.E2E, t, "none", kind)))
		}
		w(" |\n")
	}
	w("\nThe ValidatingAdmissionPolicy's rule, in CEL:\n\n```cel\n%s\n```\n\n", in.VAPRule)
}

func agent(w writer, in *Input) {
	a := in.Agent
	if a == nil {
		return
	}
	w("## Agent\n\n")
	w("`hack/bench/agentload` calls filesystem v1 PathExists (a read) and Mkdir (a mutating call; each makes a new directory)\n")
	w("through real unix sockets, each client on its own connection, on agents in processes of their own: one that\n")
	w("gates and audits every request as pipeguard-agent does (the shipped rules, Metadata level, default durability: a\n")
	w("mutating call's write-ahead record is synced before it runs), with its audit log on %s, and one with neither.\n", cell(a.AuditFilesystem))
	w("The load alternates between them every %s ms, so all see the same machine. For Mkdir, each round also loads a\n", strconv.FormatFloat(a.SliceMs, 'f', -1, 64))
	w("third agent, fsync-only, which neither attributes nor gates a call but writes a record through the same audit log\n")
	w("writer and waits for its fsync before each call, so its records commit in groups as the gated agent's do.\n\n")
	w("| op | clients | agent | calls/s | p50 ms | p99 ms | errors | agent CPU ms/call | peak RSS MiB |\n")
	w("|---|---:|---|---:|---:|---:|---:|---:|---:|\n")
	for _, c := range a.Cases {
		for _, v := range []struct {
			name string
			s    *results.AgentStats
		}{{"ungated", c.Ungated}, {"gated + audited", c.Gated}, {"fsync-only", c.FsyncOnly}} {
			if v.s == nil {
				continue
			}
			w("| %s | %d | %s | %s | %.3f | %.3f | %d | %.3f | %.1f |\n", cell(c.Op), c.Clients, v.name,
				thousands(v.s.CallsPerSecond), v.s.P50, v.s.P99, v.s.Errors, v.s.CPUPerCallMs, float64(v.s.PeakRSSBytes)/(1<<20))
		}
	}
	w("\nThe targets above take, for each round, the gated agent's calls/s over the ungated agent's, and for Mkdir the\n")
	w("gated p50 less, and over, the fsync-only agent's, all of the same round, and judge their medians; this table is the\n")
	w("whole run.\n\n")
}

func goBench(w writer, in *Input) {
	if len(in.GoBench) == 0 {
		return
	}
	w("## Go benchmarks\n\n")
	w("`make bench-go`, on one core ([what each measures](method.md#what-runs)).\n\n")
	w("<details><summary>go test -bench output</summary>\n\n```text\n%s\n```\n\n</details>\n", strings.Join(in.GoBench, "\n"))
}

// thousands writes v rounded to a whole number, with commas between groups
// of three digits.
func thousands(v float64) string {
	s := strconv.Itoa(int(v + 0.5))
	for i := len(s) - 3; i > 0 && s[i-1] != '-'; i -= 3 {
		s = s[:i] + "," + s[i:]
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
