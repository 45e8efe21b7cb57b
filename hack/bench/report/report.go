package main

import (
	"bytes"
	"fmt"
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
	targets(w, in, elapsed)
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

func webhook(w writer, in *Input) {
	if len(in.Webhook) == 0 {
		return
	}
	first := in.Webhook[0]
	w("## Webhook\n\n")
	w("`hack/bench/loadtest` sends AdmissionReviews shaped as kube-apiserver sends them (pods and Deployments with\n")
	w("managedFields, defaults and the ServiceAccount token volume; %s bytes on average) over HTTPS on loopback, from %d\n", thousands(first.ReviewBytes), first.Workers)
	w("workers that each send the next review as soon as the last is answered. The mix: pods and Deployments without a host\n")
	w("path, a log shipper mounting a host directory, CSI node pods allowed as HostProcess or by their namespace's label, and\n")
	w("pods and Deployments that must be denied; every answer is checked. Each server runs in a process of its own, started\n")
	w("afresh for each run, with the controller-runtime webhook server pipeguard-webhook uses. `floor` allows every review\n")
	w("without reading it; `pipeguard` runs as deployed, with its decision cache; `pipeguard-uncached` has rego decide every\n")
	w("review with a pipe mount; `pipeguard-scale` has 10,000 namespaces in its lookup and 50 PipeAccessPolicies.\n")
	if len(of(in, "gatekeeper", rps)) > 0 {
		w("`gatekeeper` is OPA Gatekeeper's own executable deciding pipeguard's default rule, written as a ConstraintTemplate\n")
		w("(below), on a local kube-apiserver.\n")
	}
	w("Each round runs every target once, in an order that rotates from round to round.\n\n")
	w("| target | rounds | reviews/s | server CPU µs/review | p50 ms | p99 ms | peak RSS MiB | errors | reviews/s ÷ floor | CPU ÷ floor |\n")
	w("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n")
	for _, t := range webhookTargets(in) {
		errs := 0
		for _, r := range in.Webhook {
			if r.Target == t {
				errs += r.Errors
			}
		}
		w("| %s | %d | %s | %s | %s | %s | %s | %d | %s× | %s× |\n", cell(t), len(of(in, t, rps)), num0(median(of(in, t, rps))),
			x1(1000*median(of(in, t, cpu))), ms(median(of(in, t, p50))), ms(median(of(in, t, p99))),
			mib(int64(median(of(in, t, rss)))), errs, x2(median(toFloor(in, t, rps))), x2(median(toFloor(in, t, cpu))))
	}
	w("\nMedians over the rounds; the ratios are the medians of each round's ratio to the floor of the same round.\n\n")
}

func endToEndRuns(w writer, in *Input) {
	if len(in.E2E) == 0 {
		return
	}
	w("## End to end\n\n")
	w("`hack/bench/loadtest e2e` starts kube-apiserver and etcd, serves the floor and pipeguard as webhooks and pipeguard's\n")
	w("default rule as a ValidatingAdmissionPolicy, each over a namespace of its own (labelled with the allowance, so that\n")
	w("every pod is admitted), and creates pods one after another in each namespace in turn, round after round, the order\n")
	w("rotating: CSI node pods whose containers mount csi-proxy pipes through hostPath volumes, and pods without a host\n")
	w("path. Added p50: the median over rounds of the difference to the namespace no admission check covers.\n\n")
	w("| admission check | hostPath pods p50 ms | added ms | other pods p50 ms | added ms |\n|---|---:|---:|---:|---:|\n")
	for _, t := range []string{"none", "floor", "pipeguard", "validatingadmissionpolicy"} {
		p50 := func(kind string) float64 {
			var vs []float64
			for _, r := range in.E2E {
				if r.Target == t && r.Kind == kind {
					vs = append(vs, r.P50)
				}
			}
			return median(vs)
		}
		added := func(kind string) float64 { return median(results.AddedP50(in.E2E, t, "none", kind)) }
		w("| %s | %s | %s | %s | %s |\n", t, ms(p50("hostpath")), ms(added("hostpath")), ms(p50("no-hostpath")), ms(added("no-hostpath")))
	}
	w("\npipeguard decides with its shipped rules, `rego/admission.rego`, and the built-in default PipeAccessPolicy. The\n")
	w("ValidatingAdmissionPolicy's rule, in CEL (it knows only the canonical spelling of a pipe path):\n\n```cel\n%s\n```\n\n", in.VAPRule)
}

// gatekeeperRule shows the rule Gatekeeper decided beside pipeguard's.
func gatekeeperRule(w writer, in *Input) {
	if len(of(in, "gatekeeper", rps)) == 0 {
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

// webhookTargets lists the targets of the webhook runs in the order first
// seen.
func webhookTargets(in *Input) []string {
	var out []string
	for _, r := range in.Webhook {
		if !contains(out, r.Target) {
			out = append(out, r.Target)
		}
	}
	return out
}

func contains(s []string, v string) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}
