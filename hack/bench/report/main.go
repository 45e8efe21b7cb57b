// Command report writes docs/benchmarks/README.md from the results make
// bench collects in one directory (readInput names the files); the same
// input gives the same report.
//
//	go run ./hack/bench/report machine > bin/bench/machine.json
//	go run ./hack/bench/report --in bin/bench --out docs/benchmarks --elapsed 312s
package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/pipeguard/pipeguard/hack/bench/internal/results"
	"github.com/pipeguard/pipeguard/hack/bench/internal/sysinfo"
)

func main() { os.Exit(run(os.Args[1:], os.Stdout, os.Stderr)) }

func run(args []string, stdout, stderr io.Writer) int {
	if len(args) > 0 && args[0] == "machine" {
		if len(args) > 1 {
			fmt.Fprintln(stderr, "report machine: takes no arguments")
			return 2
		}
		out, _ := json.MarshalIndent(sysinfo.Describe(), "", "  ")
		fmt.Fprintf(stdout, "%s\n", out)
		return 0
	}
	fs := flag.NewFlagSet("report", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	in := fs.String("in", "bin/bench", "directory of the results")
	out := fs.String("out", "docs/benchmarks", "directory to write README.md to")
	elapsed := fs.Duration("elapsed", 0, "wall time of the benchmark run so far, to record in the report")
	err := fs.Parse(args)
	switch {
	case err != nil:
	case fs.NArg() > 0:
		err = fmt.Errorf("unexpected arguments %q; every setting is a flag (or the machine subcommand)", fs.Args())
	case *in == "" || *out == "":
		err = errors.New("--in and --out must not be empty")
	case *elapsed < 0:
		err = fmt.Errorf("--elapsed %v is negative", *elapsed)
	}
	if err != nil {
		fmt.Fprintln(stderr, "report:", err)
		return 2
	}
	input, err := readInput(*in)
	if err == nil {
		err = os.MkdirAll(*out, 0o755)
	}
	if err == nil {
		err = os.WriteFile(filepath.Join(*out, "README.md"), report(input, *elapsed), 0o644)
	}
	if err != nil {
		fmt.Fprintln(stderr, "report:", err)
		return 1
	}
	fmt.Fprintf(stdout, "wrote %s\n", filepath.Join(*out, "README.md"))
	return 0
}

// Review is one run of hack/bench/loadtest, as its --json writes it.
type Review = results.Review

// Input is everything a report is made from. Gatekeeper is nil when
// gatekeeper.json is absent; GoBench holds the lines of the Go benchmarks'
// output worth showing: package headers and results.
type Input struct {
	Machine    sysinfo.Machine
	Webhook    []*Review
	Gatekeeper *results.GatekeeperPeer
	E2E        []*results.Pods
	VAPRule    string
	Agent      *results.AgentResults
	GoBench    []string
}

// readInput reads the files of dir: machine.json (report machine),
// webhook.json (hack/bench/loadtest --json), gatekeeper.json (its
// --gatekeeper-json), e2e.json (hack/bench/loadtest e2e --json), agent.json
// (hack/bench/agentload --json) and gobench.txt (go test -bench). The
// machine description and the webhook runs are required.
func readInput(dir string) (*Input, error) {
	in := &Input{}
	var e2e results.EndToEnd
	var agent results.AgentResults
	for _, f := range []struct {
		name     string
		v        any
		required bool
	}{
		{"machine.json", &in.Machine, true},
		{"webhook.json", &in.Webhook, true},
		{"gatekeeper.json", &in.Gatekeeper, false},
		{"e2e.json", &e2e, false},
		{"agent.json", &agent, false},
	} {
		b, err := os.ReadFile(filepath.Join(dir, f.name))
		if errors.Is(err, os.ErrNotExist) && !f.required {
			continue
		}
		if err != nil {
			return nil, err
		}
		if err := json.Unmarshal(b, f.v); err != nil {
			return nil, fmt.Errorf("%s: %w", filepath.Join(dir, f.name), err)
		}
	}
	if gk := in.Gatekeeper; gk != nil && (gk.Version == "" || strings.TrimSpace(gk.Rego) == "" || len(gk.Kinds) == 0) {
		return nil, errors.New("gatekeeper.json: Gatekeeper's version, its rule's rego and the kinds it matches are all required")
	}
	for _, r := range in.Webhook {
		if r == nil || r.Target == "" {
			return nil, errors.New("webhook.json: a run without a target")
		}
	}
	in.E2E, in.VAPRule = e2e.Runs, e2e.VAPRule
	if agent.Cases != nil {
		in.Agent = &agent
		for _, c := range agent.Cases {
			if c == nil || c.Gated == nil || c.Ungated == nil {
				return nil, errors.New("agent.json: a case without both agents")
			}
		}
	}
	b, err := os.ReadFile(filepath.Join(dir, "gobench.txt"))
	for line := range strings.Lines(string(b)) {
		if line = strings.TrimRight(line, " \t\r\n"); strings.HasPrefix(line, "pkg: ") || strings.HasPrefix(line, "Benchmark") || strings.HasPrefix(line, "FAIL") {
			in.GoBench = append(in.GoBench, line)
		}
	}
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, err
	}
	return in, nil
}
