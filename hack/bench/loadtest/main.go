// Command loadtest measures pipeguard's admission webhook at saturation over
// HTTPS on loopback, side by side with the floor: a webhook that allows
// everything, served by the same controller-runtime webhook server, TLS,
// HTTP and AdmissionReview codec that pipeguard-webhook uses. The reviews
// are shaped as kube-apiserver sends them. Each round serves every target in
// turn, each in a process of its own started afresh (this executable, re-run
// with a hidden serve subcommand), so the CPU time and RSS reported are the
// server's alone; the order rotates from round to round. Targets are
// compared by the median over rounds of their ratio to the floor in the same
// round, which a busy machine disturbs far less than absolute numbers.
//
// The gatekeeper target is OPA Gatekeeper deciding pipeguard's default rule
// as a ConstraintTemplate (gatekeeper_rule.go): its executable (built by
// make bench-gatekeeper from hack/tools/gatekeeper), webhook operation only,
// on a kube-apiserver and etcd started from KUBEBUILDER_ASSETS once for all
// rounds, with Gatekeeper's CRDs taken from its module's
// deploy/gatekeeper.yaml. Each round starts a Gatekeeper process afresh,
// waits until it decides every kind of review of the mix as pipeguard does
// and then loads its /v1/admit as the other targets are loaded.
//
//	go run ./hack/bench/loadtest --rounds 5 --json results.json
//	go run ./hack/bench/loadtest --targets floor,pipeguard --rounds 3 --duration 3s
//	KUBEBUILDER_ASSETS="$(hack/control-plane.sh | tail -n 1)" go run ./hack/bench/loadtest --targets floor,pipeguard,gatekeeper
//
// The e2e subcommand measures, through kube-apiserver and etcd started from
// KUBEBUILDER_ASSETS (see hack/control-plane.sh), how much each admission
// check adds to creating a pod: the floor and pipeguard as webhooks, and
// pipeguard's default rule as a ValidatingAdmissionPolicy, each over a
// namespace of its own, against a namespace that none covers.
//
//	KUBEBUILDER_ASSETS="$(hack/control-plane.sh | tail -n 1)" go run ./hack/bench/loadtest e2e --json e2e.json
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/go-logr/logr"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/pipeguard/pipeguard/hack/bench/internal/sysinfo"
)

// config is the command line.
type config struct {
	targets  []string
	rounds   int
	base     Options
	jsonPath string
	// The gatekeeper target's executable, its manifest ("": found in the
	// module cache) and where to describe it as JSON for the report.
	gatekeeperBin, gatekeeperManifest, gatekeeperJSON string
}

func main() {
	if len(os.Args) > 1 && os.Args[1] == serveCommand {
		os.Exit(serveMain(os.Args[2:], os.Stdin, os.Stdout, os.Stderr))
	}
	if len(os.Args) > 1 && os.Args[1] == e2eCommand {
		ctrl.SetLogger(logr.Discard())
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
	ctrl.SetLogger(logr.Discard())
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()

	fmt.Printf("GOMAXPROCS %d, %s, %s/%s; load average before: %s\n",
		runtime.GOMAXPROCS(0), runtime.Version(), runtime.GOOS, runtime.GOARCH, sysinfo.LoadAverage())
	if slices.Contains(cfg.targets, TargetGatekeeper) {
		env, err := startGatekeeperEnv(ctx, cfg.gatekeeperBin, cfg.gatekeeperManifest, targetOf(TargetGatekeeper).namespaces, os.Stderr)
		if err != nil {
			fmt.Fprintln(os.Stderr, "loadtest:", err)
			return 1
		}
		defer func() {
			if err := env.stop(); err != nil {
				fmt.Fprintln(os.Stderr, "loadtest: stopping Gatekeeper's control plane:", err)
			}
		}()
		cfg.base.gatekeeper = env
		if cfg.gatekeeperJSON != "" {
			defer func() {
				out, _ := json.MarshalIndent(env.peer, "", "  ")
				if err := os.WriteFile(cfg.gatekeeperJSON, append(out, '\n'), 0o644); err != nil {
					fmt.Fprintln(os.Stderr, "loadtest:", err)
				}
			}()
		}
	}
	var results []*Result
	for round := range cfg.rounds {
		for i := range cfg.targets {
			opts := cfg.base
			opts.Target, opts.Round = cfg.targets[(i+round)%len(cfg.targets)], round
			r, err := Run(ctx, opts)
			if err != nil {
				fmt.Fprintf(os.Stderr, "loadtest: %s, round %d: %v\n", opts.Target, round+1, err)
				return 1
			}
			fmt.Fprintf(os.Stderr, "round %d %-19s %7.0f reviews/s  cpu %.1f µs/review  p50 %.3f ms  errors %d\n",
				round+1, r.Target, r.ReviewsPerSecond, 1000*r.CPUPerReviewMs, r.P50, r.Errors)
			results = append(results, r)
		}
	}
	fmt.Printf("load average after: %s\n\n", sysinfo.LoadAverage())
	printSummary(os.Stdout, results, cfg.targets)

	if cfg.jsonPath != "" {
		out, _ := json.MarshalIndent(results, "", "  ")
		if err := os.WriteFile(cfg.jsonPath, append(out, '\n'), 0o644); err != nil {
			fmt.Fprintln(os.Stderr, "loadtest:", err)
			return 1
		}
	}
	for _, r := range results {
		if r.Errors > 0 {
			return 1
		}
	}
	return 0
}

func parseFlags(args []string) (*config, error) {
	fs := flag.NewFlagSet("loadtest", flag.ContinueOnError)
	targets := fs.String("targets", strings.Join(allTargets, ","), "comma-separated targets, each run once per round: "+strings.Join(allTargets, ", "))
	rounds := fs.Int("rounds", 5, "rounds; each runs every target once")
	workers := fs.Int("workers", 16, "concurrent senders, each sending its next review as soon as the last is answered")
	duration := fs.Duration("duration", 5*time.Second, "measured time of each run")
	requests := fs.Int("requests", 0, "also stop each run after this many requests (0: no limit)")
	warmup := fs.Duration("warmup", time.Second, "unmeasured load before each run")
	jsonPath := fs.String("json", "", "also write the results as JSON to this file")
	gkBin := fs.String("gatekeeper", filepath.Join("bin", "tools", "gatekeeper"), "Gatekeeper's executable, for the "+TargetGatekeeper+" target")
	gkManifest := fs.String("gatekeeper-manifest", "", "Gatekeeper's deploy/gatekeeper.yaml, whose CRDs the "+TargetGatekeeper+" target installs (default: from the module cache, for the executable's version)")
	gkJSON := fs.String("gatekeeper-json", "", "also write Gatekeeper's version, rule and command line as JSON to this file, when the "+TargetGatekeeper+" target runs")
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("unexpected arguments %q; every setting is a flag", fs.Args())
	}
	cfg := &config{rounds: *rounds, jsonPath: *jsonPath, gatekeeperBin: *gkBin, gatekeeperManifest: *gkManifest, gatekeeperJSON: *gkJSON,
		base: Options{Workers: *workers, Duration: *duration, Requests: *requests, Warmup: *warmup}}
	for _, t := range strings.Split(*targets, ",") {
		if targetOf(t) == nil {
			return nil, fmt.Errorf("--targets: %q is unknown; use %s", t, strings.Join(allTargets, ", "))
		}
		cfg.targets = append(cfg.targets, t)
	}
	if cfg.rounds < 1 || cfg.rounds > 100 {
		return nil, fmt.Errorf("--rounds %d is out of range; use 1 to 100", cfg.rounds)
	}
	o := cfg.base
	o.Target = cfg.targets[0]
	return cfg, o.validate()
}
