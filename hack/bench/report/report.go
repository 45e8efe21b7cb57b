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
	"deployed": "as deployed: pods and Deployments without a host path, a log shipper mounting a host directory, CSI node pods allowed as HostProcess or by their namespace's label, and pods and Deployments that must be denied. A DaemonSet's pods differ only in name, so pipeguard's decision cache answers most of the reviews with a pipe",
	"pipes":    "the reviews with a pipe mount alone, in the deployed mix's proportions, each with a ServiceAccount and pipe volume names of its own: no decision is remembered from another review, so rego decides every one",
	"denials":  "the pods and Deployments that must be denied alone, each unique as in the pipes mix",
}

func webhook(w writer, in *Input) {
	if len(in.Webhook) == 0 {
		return
	}
	first := in.Webhook[0]
	w("## Webhook\n\n")
	w("`hack/bench/loadtest` sends AdmissionReviews shaped as kube-apiserver sends them (pods and Deployments with\n")
	w("managedFields, defaults and the ServiceAccount token volume; %s bytes on average) over HTTPS on loopback, from %d\n", thousands(float64(first.ReviewBytes)), first.Workers)
	w("workers that each send the next review as soon as the last is answered; every answer is checked. Each server runs in\n")
	w("a process of its own, started afresh for each run, with the controller-runtime webhook server pipeguard-webhook uses.\n")
	w("`floor` allows every review without reading it; `pipeguard` runs as deployed, with its decision cache;\n")
	w("`pipeguard-scale` has 10,000 namespaces in its lookup and 50 PipeAccessPolicies.\n")
	if len(results.Of(in.Webhook, "gatekeeper", rps)) > 0 {
		w("`gatekeeper` is OPA Gatekeeper's own executable deciding pipeguard's default rule, written as a ConstraintTemplate\n")
		w("(below), on a local kube-apiserver, at Go's default GOGC as its deployment runs it; `gatekeeper-gogc400` is the same\n")
		w("at GOGC=400, as pipeguard-webhook runs.\n")
	}
	w("Each round sends every mix to every target once, in an order that rotates from round to round. CPU time per\n")
	w("review, the serving process's own, is the headline: unlike reviews/s it hardly depends on what else the machine runs.\n\n")
	for _, mix := range []string{"deployed", "pipes", "denials"} {
		runs := results.InMix(in.Webhook, mix)
		if len(runs) == 0 {
			continue
		}
		w("### The %s mix\n\n%s.\n\n", mix, strings.ToUpper(mixTitles[mix][:1])+mixTitles[mix][1:])
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
		w("\n")
	}
	w("Medians over the rounds; the ratios are the medians of each round's ratio to the floor of the same round and mix.\n\n")
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
	w("`gatekeeper` runs OPA Gatekeeper %s (built from its Go module by `make bench-gatekeeper`) with its deployment's\n", gk.Version)
	w("webhook arguments, webhook operation only, on kube-apiserver and etcd holding its CRDs, the ConstraintTemplate below, the\n")
	w("namespaces of the mix with their labels and a Constraint matching\n%s.\n", strings.Join(gk.Kinds, ", "))
	w("Each round starts it afresh and measures it only once it decides every kind of review of the mix as pipeguard does.\n")
	w("Its command line:\n\n")
	w("```\ngatekeeper %s\n```\n\n", strings.Join(gk.Args, " "))
	w("pipeguard decides with its shipped rules, `rego/admission.rego`, and the built-in default PipeAccessPolicy\n")
	w("(`policy/defaults.go`: CSI Proxy's pipes, allowing privileged and HostProcess containers and namespaces labelled\n")
	w("`pipeguard.io/allow-csi-proxy=true`). Gatekeeper decides the same rule as this ConstraintTemplate's rego, which reads the\n")
	w("namespace's labels from `input.review.namespaceObject`, filled by Gatekeeper from its cache of Namespaces. It knows\n")
	w("the canonical spelling of a pipe path, in any case and with either slash; pipeguard also normalizes the others:\n\n")
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
	w("## End to end\n\n")
	w("`hack/bench/loadtest e2e` starts kube-apiserver and etcd, serves the floor, pipeguard and OPA Gatekeeper as webhooks\n")
	w("and pipeguard's default rule as a ValidatingAdmissionPolicy, each over namespaces of its own, and creates pods one\n")
	w("after another, the namespaces taking turns pod by pod, the order rotating: CSI node pods whose containers mount\n")
	w("csi-proxy pipes through hostPath volumes, in a namespace labelled with the allowance; pods without a host path; log\n")
	w("shippers whose hostPath volumes are ordinary directories (`/var/log`, `/var/lib/docker/containers`, `C:\\var\\log`); and\n")
	w("the same CSI node pods in a namespace without the allowance, which every check but the floor denies (their p50 is\n")
	w("the time to the denial). Each pod's volume names are its own, so no decision is remembered from another pod.\n")
	w("pipeguard and Gatekeeper are registered with the matchConditions of `config/webhook/manifests.yaml`, so the API\n")
	w("server calls them only for pods that could name a pipe; the floor is called for every pod. Added p50: the median\n")
	w("over rounds of the difference to the namespace no admission check covers.\n\n")
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
	w("\npipeguard decides with its shipped rules, `rego/admission.rego`, and the built-in default PipeAccessPolicy, and\n")
	w("Gatekeeper with the ConstraintTemplate above. The ValidatingAdmissionPolicy's rule, in CEL (it knows only the\n")
	w("canonical spelling of a pipe path):\n\n```cel\n%s\n```\n\n", in.VAPRule)
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
	w("third agent, fsync-only, which neither gates nor audits but appends and fsyncs a 1 KB record before each call, and\n")
	w("appends and fsyncs 1 KB records beside the audit log for a slice, one after another (the fsync floor).\n\n")
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
	w("gated (or fsync-only) p50 minus the ungated p50 minus the fsync floor's p50, all of the same round, and judge their\n")
	w("medians; this table is the whole run.\n\n")
}

func goBench(w writer, in *Input) {
	if len(in.GoBench) == 0 {
		return
	}
	w("## Go benchmarks\n\n")
	w("`make bench-go`: the admission path, the rego engine, the handler of each target for each kind of request, and the\n")
	w("agent (BenchmarkGuardOverhead compares gated and ungated agents in one process), on one core.\n\n")
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
