// Command loadtest measures pipeguard's admission webhook at saturation over
// HTTPS on loopback, side by side with the floor: a webhook that allows
// everything, served by the same controller-runtime webhook server, TLS,
// HTTP and AdmissionReview codec that pipeguard-webhook uses. The reviews
// are shaped as kube-apiserver sends them, in three mixes (mix.go): as
// deployed, the pipe mounts alone with every review unique so that rego
// decides each one, and the denials alone. Each round sends every mix to
// every target in turn, each in a process of its own started afresh (this
// executable, re-run with a hidden serve subcommand), so the CPU time and
// RSS reported are the server's alone; the order rotates from round to
// round. Targets are compared by the median over rounds of their ratio to
// the floor in the same round and mix, which a busy machine disturbs far
// less than absolute numbers.
//
// The gatekeeper targets are OPA Gatekeeper deciding pipeguard's default
// rule as a ConstraintTemplate (gatekeeper_rule.go): its executable (built
// by make bench-gatekeeper from hack/tools/gatekeeper), webhook operation
// only, on a kube-apiserver and etcd started from KUBEBUILDER_ASSETS once
// for all rounds, with Gatekeeper's CRDs taken from its module's
// deploy/gatekeeper.yaml; gatekeeper runs at Go's default GOGC, as its
// deployment does, and gatekeeper-gogc400 at pipeguard-webhook's. Each run
// starts a Gatekeeper process afresh, waits until it decides every kind of
// review of the mix as pipeguard does and then loads its /v1/admit as the
// other targets are loaded.
//
//	go run ./hack/bench/loadtest --targets floor,pipeguard --mixes pipes --rounds 3 --duration 3s --json results.json
//	KUBEBUILDER_ASSETS="$(hack/control-plane.sh | tail -n 1)" go run ./hack/bench/loadtest --targets floor,pipeguard,gatekeeper
//
// The e2e subcommand measures, through kube-apiserver and etcd started from
// KUBEBUILDER_ASSETS (see hack/control-plane.sh), how much each admission
// check adds to creating a pod: the floor, pipeguard and Gatekeeper as
// webhooks, and pipeguard's default rule as a ValidatingAdmissionPolicy,
// each over namespaces of its own, against a namespace that none covers,
// for pods each check admits and for pods it must deny (e2e.go).
//
//	KUBEBUILDER_ASSETS="$(hack/control-plane.sh | tail -n 1)" go run ./hack/bench/loadtest e2e --json e2e.json
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/go-logr/logr"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/pipeguard/pipeguard/hack/bench/internal/results"
	"github.com/pipeguard/pipeguard/hack/bench/internal/sysinfo"
)

// config is the command line.
type config struct {
	targets  []string
	mixes    []string
	rounds   int
	duration time.Duration
	jsonPath string
	// The gatekeeper target's executable and where to describe it as JSON
	// for the report.
	gatekeeperBin, gatekeeperJSON string
}

func main() {
	ctrl.SetLogger(logr.Discard())
	switch {
	case len(os.Args) > 1 && os.Args[1] == serveCommand:
		os.Exit(serveMain(os.Args[2:], os.Stdin, os.Stdout, os.Stderr))
	case len(os.Args) > 1 && os.Args[1] == e2eCommand:
		os.Exit(e2eMain(os.Args[2:], os.Stdout, os.Stderr))
	}
	os.Exit(run())
}

func run() int {
	cfg, err := parseFlags(os.Args[1:])
	if err != nil {
		fmt.Fprintln(os.Stderr, "loadtest:", err)
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()

	fmt.Printf("GOMAXPROCS %d, %s, %s/%s; load average before: %s\n",
		runtime.GOMAXPROCS(0), runtime.Version(), runtime.GOOS, runtime.GOARCH, sysinfo.LoadAverage())
	var gk *gatekeeperEnv
	if slices.ContainsFunc(cfg.targets, func(t string) bool { return targetOf(t).peer }) {
		if gk, err = startGatekeeperEnv(ctx, cfg.gatekeeperBin, smallNamespaces, os.Stderr); err != nil {
			fmt.Fprintln(os.Stderr, "loadtest:", err)
			return 1
		}
		defer func() {
			if err := gk.stop(); err != nil {
				fmt.Fprintln(os.Stderr, "loadtest: stopping Gatekeeper's control plane:", err)
			}
		}()
		if cfg.gatekeeperJSON != "" {
			defer writeJSON(cfg.gatekeeperJSON, &gk.peer)
		}
	}
	var runs []*Result
	for round := range cfg.rounds {
		for _, mix := range cfg.mixes {
			for i := range cfg.targets {
				opts := Options{Target: cfg.targets[(i+round)%len(cfg.targets)], Mix: mix, Round: round,
					Duration: cfg.duration, Warmup: warmup, gatekeeper: gk}
				if targetOf(opts.Target).deployedOnly && mix != MixDeployed {
					continue
				}
				r, err := Run(ctx, opts)
				if err != nil {
					fmt.Fprintf(os.Stderr, "loadtest: %s, %s mix, round %d: %v\n", opts.Target, mix, round+1, err)
					return 1
				}
				fmt.Fprintf(os.Stderr, "round %d %-8s %-19s %7.0f reviews/s  cpu %.1f µs/review  p50 %.3f ms  errors %d\n",
					round+1, mix, r.Target, r.ReviewsPerSecond, 1000*r.CPUPerReviewMs, r.P50, r.Errors)
				runs = append(runs, r)
			}
		}
	}
	fmt.Printf("load average after: %s\n\n", sysinfo.LoadAverage())
	for _, mix := range cfg.mixes {
		fmt.Printf("%s mix:\n", mix)
		printSummary(os.Stdout, results.InMix(runs, mix), cfg.targets)
	}
	if cfg.jsonPath != "" && !writeJSON(cfg.jsonPath, runs) {
		return 1
	}
	for _, r := range runs {
		if r.Errors > 0 {
			return 1
		}
	}
	return 0
}

// writeJSON writes v as indented JSON to path and reports whether it did.
func writeJSON(path string, v any) bool {
	out, _ := json.MarshalIndent(v, "", "  ")
	if err := os.WriteFile(path, append(out, '\n'), 0o644); err != nil {
		fmt.Fprintln(os.Stderr, "loadtest:", err)
		return false
	}
	return true
}

func parseFlags(args []string) (*config, error) {
	fs := flag.NewFlagSet("loadtest", flag.ContinueOnError)
	targets := fs.String("targets", strings.Join(allTargets, ","), "comma-separated targets, each run once per round: "+strings.Join(allTargets, ", "))
	cfg := &config{}
	mixNames := fs.String("mixes", strings.Join(mixes, ","), "comma-separated mixes of reviews, each sent to every target once per round: "+strings.Join(mixes, ", "))
	fs.IntVar(&cfg.rounds, "rounds", 10, "rounds; each runs every target once with every mix")
	fs.DurationVar(&cfg.duration, "duration", 5*time.Second, "measured time of each run")
	fs.StringVar(&cfg.jsonPath, "json", "", "also write the results as JSON to this file")
	fs.StringVar(&cfg.gatekeeperBin, "gatekeeper", filepath.Join("bin", "tools", "gatekeeper"), "Gatekeeper's executable, for the "+TargetGatekeeper+" target")
	fs.StringVar(&cfg.gatekeeperJSON, "gatekeeper-json", "", "also write Gatekeeper's version, rule and command line as JSON to this file, when the "+TargetGatekeeper+" target runs")
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	for _, t := range strings.Split(*targets, ",") {
		if targetOf(t) == nil {
			return nil, fmt.Errorf("--targets: %q is unknown; use %s", t, strings.Join(allTargets, ", "))
		}
		cfg.targets = append(cfg.targets, t)
	}
	for _, m := range strings.Split(*mixNames, ",") {
		if !slices.Contains(mixes, m) {
			return nil, fmt.Errorf("--mixes: %q is unknown; use %s", m, strings.Join(mixes, ", "))
		}
		cfg.mixes = append(cfg.mixes, m)
	}
	switch {
	case fs.NArg() > 0:
		return nil, fmt.Errorf("unexpected arguments %q; every setting is a flag", fs.Args())
	case cfg.rounds < 1 || cfg.rounds > 100:
		return nil, fmt.Errorf("--rounds %d is out of range; use 1 to 100", cfg.rounds)
	case cfg.duration <= 0 || cfg.duration > 10*time.Minute:
		return nil, fmt.Errorf("--duration %v is out of range; use up to 10m", cfg.duration)
	}
	return cfg, nil
}

// printSummary writes each target's reviews/s and CPU time per review as
// the medians of their per-round ratios to the floor's, and to Gatekeeper's.
func printSummary(w io.Writer, runs []*Result, names []string) {
	rps := func(r *Result) float64 { return r.ReviewsPerSecond }
	cpu := func(r *Result) float64 { return r.CPUPerReviewMs }
	for _, name := range names {
		fmt.Fprintf(w, "%-19s reviews/s %.2f× the floor's, CPU per review %.2f× (medians over %d rounds)\n", name,
			results.Median(results.RoundRatios(runs, name, TargetFloor, rps)), results.Median(results.RoundRatios(runs, name, TargetFloor, cpu)),
			len(results.Of(runs, name, rps)))
	}
	for _, gk := range []string{TargetGatekeeper, TargetGatekeeperGOGC} {
		if slices.Contains(names, gk) && slices.Contains(names, TargetPipeguard) {
			fmt.Fprintf(w, "pipeguard ÷ %s: reviews/s %.2f×, its CPU per review %.2f× pipeguard's (medians of the per-round ratios)\n", gk,
				results.Median(results.RoundRatios(runs, TargetPipeguard, gk, rps)), results.Median(results.RoundRatios(runs, gk, TargetPipeguard, cpu)))
		}
	}
	for _, r := range runs {
		if r.FirstError != "" {
			fmt.Fprintf(w, "%s, round %d: %d errors; first: %s\n", r.Target, r.Round+1, r.Errors, r.FirstError)
		}
	}
}
