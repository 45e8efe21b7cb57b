// Command report writes the benchmark report, docs/benchmarks/README.md,
// from the results that make bench collects in one directory: machine.json
// (report machine), webhook.json (hack/bench/loadtest --json), agent.json
// (hack/bench/agentload --json) and gobench.txt (go test -bench). The same
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
	"time"

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
	cfg, err := parseFlags(args)
	if err != nil {
		fmt.Fprintln(stderr, "report:", err)
		return 2
	}
	in, err := readInput(cfg.in)
	if err != nil {
		fmt.Fprintln(stderr, "report:", err)
		return 1
	}
	if err := write(cfg.out, in, cfg.elapsed); err != nil {
		fmt.Fprintln(stderr, "report:", err)
		return 1
	}
	fmt.Fprintf(stdout, "wrote %s\n", filepath.Join(cfg.out, "README.md"))
	return 0
}

type config struct {
	in, out string
	elapsed time.Duration
}

func parseFlags(args []string) (*config, error) {
	fs := flag.NewFlagSet("report", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	cfg := &config{}
	fs.StringVar(&cfg.in, "in", "bin/bench", "directory of the results")
	fs.StringVar(&cfg.out, "out", "docs/benchmarks", "directory to write README.md to")
	fs.DurationVar(&cfg.elapsed, "elapsed", 0, "wall time of the benchmark run so far, to record in the report")
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	switch {
	case fs.NArg() > 0:
		return nil, fmt.Errorf("unexpected arguments %q; every setting is a flag (or the machine subcommand)", fs.Args())
	case cfg.in == "" || cfg.out == "":
		return nil, errors.New("--in and --out must not be empty")
	case cfg.elapsed < 0:
		return nil, fmt.Errorf("--elapsed %v is negative", cfg.elapsed)
	}
	return cfg, nil
}

// write writes the report into dir.
func write(dir string, in *Input, elapsed time.Duration) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, "README.md"), report(in, elapsed), 0o644)
}
