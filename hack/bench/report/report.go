package main

import (
	"bytes"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// report is the markdown of docs/benchmarks/README.md. elapsed, when
// positive, is the wall time of make bench up to writing the report.
func report(in *Input, elapsed time.Duration) []byte {
	var b bytes.Buffer
	w := func(format string, args ...any) { fmt.Fprintf(&b, format, args...) }
	w("# Benchmarks\n\n")
	w("Written by `make bench` (`hack/bench/report`) from the results of `hack/bench/loadtest` (the admission webhook over HTTPS on\n")
	w("loopback), `hack/bench/agentload` (the node agent over unix sockets) and the Go benchmarks. Run `make bench` to measure\n")
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
