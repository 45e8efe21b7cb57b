// Command loadtest measures pipeguard's admission webhook at saturation over
// HTTPS on loopback beside the floor (an allow-all webhook served the same
// way), pipeguard-scale and OPA Gatekeeper deciding the same rule, with the
// three mixes of reviews of mix.go; the e2e subcommand measures pod creation
// through kube-apiserver (e2e.go). docs/benchmarks/method.md says how.
//
//	go run ./hack/bench/loadtest --targets floor,pipeguard --mixes pipes --rounds 3 --duration 3s --json results.json
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
	targets, mixes []string
	rounds         int
	duration       time.Duration
	jsonPath       string
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
	if cfg.jsonPath != "" && !writeJSON(cfg.jsonPath, runs) || slices.ContainsFunc(runs, func(r *Result) bool { return r.Errors > 0 }) {
		return 1
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
	cfg := &config{}
	targets := fs.String("targets", strings.Join(allTargets, ","), "comma-separated targets, each run once per round: "+strings.Join(allTargets, ", "))
	mixNames := fs.String("mixes", strings.Join(mixes, ","), "comma-separated mixes of reviews, each sent to every target once per round: "+strings.Join(mixes, ", "))
	fs.IntVar(&cfg.rounds, "rounds", 10, "rounds; each runs every target once with every mix")
	fs.DurationVar(&cfg.duration, "duration", 5*time.Second, "measured time of each run")
	fs.StringVar(&cfg.jsonPath, "json", "", "also write the results as JSON to this file")
	fs.StringVar(&cfg.gatekeeperBin, "gatekeeper", filepath.Join("bin", "tools", "gatekeeper"), "Gatekeeper's executable, for the "+TargetGatekeeper+" target")
	fs.StringVar(&cfg.gatekeeperJSON, "gatekeeper-json", "", "also write Gatekeeper's version, rule and command line as JSON to this file, when the "+TargetGatekeeper+" target runs")
	err := fs.Parse(args)
	if err == nil {
		cfg.targets, err = known("--targets", *targets, allTargets)
	}
	if err == nil {
		cfg.mixes, err = known("--mixes", *mixNames, mixes)
	}
	switch {
	case err != nil:
		return nil, err
	case fs.NArg() > 0:
		return nil, fmt.Errorf("unexpected arguments %q; every setting is a flag", fs.Args())
	case cfg.rounds < 1 || cfg.rounds > 100:
		return nil, fmt.Errorf("--rounds %d is out of range; use 1 to 100", cfg.rounds)
	case cfg.duration <= 0 || cfg.duration > 10*time.Minute:
		return nil, fmt.Errorf("--duration %v is out of range; use up to 10m", cfg.duration)
	}
	return cfg, nil
}

// known splits the comma-separated list of flag and refuses a name not in all.
func known(flag, list string, all []string) ([]string, error) {
	names := strings.Split(list, ",")
	for _, n := range names {
		if !slices.Contains(all, n) {
			return nil, fmt.Errorf("%s: %q is unknown; use %s", flag, n, strings.Join(all, ", "))
		}
	}
	return names, nil
}

// printSummary writes each target's reviews/s and CPU time per review as
// the medians of their per-round ratios to the floor's, and to Gatekeeper's.
func printSummary(w io.Writer, runs []*Result, names []string) {
	rps := func(r *Result) float64 { return r.ReviewsPerSecond }
	cpu := func(r *Result) float64 { return r.CPUPerReviewMs }
	ratio := func(t, ref string, m func(*Result) float64) float64 {
		return results.Median(results.RoundRatios(runs, t, ref, m))
	}
	for _, name := range names {
		if n := len(results.Of(runs, name, rps)); n > 0 {
			fmt.Fprintf(w, "%-19s reviews/s %.2f× the floor's, CPU per review %.2f× (medians over %d rounds)\n", name,
				ratio(name, TargetFloor, rps), ratio(name, TargetFloor, cpu), n)
		}
	}
	for _, gk := range []string{TargetGatekeeper, TargetGatekeeperGOGC} {
		if slices.Contains(names, gk) && slices.Contains(names, TargetPipeguard) {
			fmt.Fprintf(w, "pipeguard ÷ %s: reviews/s %.2f×, its CPU per review %.2f× pipeguard's (medians of the per-round ratios)\n", gk,
				ratio(TargetPipeguard, gk, rps), ratio(gk, TargetPipeguard, cpu))
		}
	}
	for _, r := range runs {
		if r.FirstError != "" {
			fmt.Fprintf(w, "%s, round %d: %d errors; first: %s\n", r.Target, r.Round+1, r.Errors, r.FirstError)
		}
	}
}
