// Command agentload measures what pipeguard-agent's gate and audit log cost
// a CSI driver: calls/s and latency of filesystem v1 PathExists (a read)
// and Mkdir (a mutating call, whose write-ahead audit record is synced to
// disk before the directory is made), through real unix sockets, on an
// agent that gates and audits every request as pipeguard-agent does (the
// shipped rules, Metadata level, the default durability) and on one that
// does neither. Each agent runs in a process of its own (this executable,
// re-run with a hidden serve subcommand); the load alternates between them
// in short slices so that both see the same machine.
//
//	go run ./hack/bench/agentload --clients 1,16 --duration 5s --json agent.json
//
// The kubelet directories and the audit log go to --dir, which should lie
// on the disk an agent would write to, not on tmpfs; the file system type
// is reported.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/pipeguard/pipeguard/hack/bench/internal/results"
	"github.com/pipeguard/pipeguard/hack/bench/internal/sysinfo"
)

// Stats, Case and Results are the file format hack/bench/report reads.
type (
	Stats   = results.AgentStats
	Case    = results.AgentCase
	Results = results.AgentResults
)

// config is the command line.
type config struct {
	ops      []string
	clients  []int
	duration time.Duration
	warmup   time.Duration
	slice    time.Duration
	dir      string
	jsonPath string
}

func main() {
	if len(os.Args) > 1 && os.Args[1] == serveCommand {
		os.Exit(serveMain(os.Args[2:], os.Stdin, os.Stdout, os.Stderr))
	}
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

func run(args []string, stdout, stderr io.Writer) int {
	cfg, err := parseFlags(args)
	if err != nil {
		fmt.Fprintln(stderr, "agentload:", err)
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	res, err := measure(ctx, cfg, stderr)
	if err != nil {
		fmt.Fprintln(stderr, "agentload:", err)
		return 1
	}
	printTable(stdout, res)
	if cfg.jsonPath != "" {
		out, _ := json.MarshalIndent(res, "", "  ")
		if err := os.WriteFile(cfg.jsonPath, append(out, '\n'), 0o644); err != nil {
			fmt.Fprintln(stderr, "agentload:", err)
			return 1
		}
	}
	for _, c := range res.Cases {
		if c.Ungated.Errors+c.Gated.Errors > 0 {
			return 1
		}
	}
	return 0
}

func parseFlags(args []string) (*config, error) {
	fs := flag.NewFlagSet("agentload", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	ops := fs.String("ops", OpPathExists+","+OpMkdir, "comma-separated operations: PathExists, Mkdir")
	clients := fs.String("clients", "1,16", "comma-separated numbers of concurrent clients, each on its own connection")
	cfg := &config{}
	fs.DurationVar(&cfg.duration, "duration", 5*time.Second, "measured time of each agent in each case")
	fs.DurationVar(&cfg.warmup, "warmup", time.Second, "unmeasured load on each agent before each case")
	fs.DurationVar(&cfg.slice, "slice", 250*time.Millisecond, "how long the load stays on one agent before it moves to the other")
	fs.StringVar(&cfg.dir, "dir", "", "directory for the kubelet directories and the audit log, on the disk to measure (default: a new directory in the user cache directory, removed afterwards)")
	fs.StringVar(&cfg.jsonPath, "json", "", "also write the results as JSON to this file")
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("unexpected arguments %q; every setting is a flag", fs.Args())
	}
	if cfg.dir != "" {
		abs, err := filepath.Abs(cfg.dir)
		if err != nil {
			return nil, fmt.Errorf("--dir: %w", err)
		}
		cfg.dir = abs
	}
	for f := range strings.SplitSeq(*ops, ",") {
		switch f = strings.TrimSpace(f); f {
		case OpPathExists, OpMkdir:
			cfg.ops = append(cfg.ops, f)
		default:
			return nil, fmt.Errorf("--ops: %q is not PathExists or Mkdir", f)
		}
	}
	for f := range strings.SplitSeq(*clients, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 || n > 256 {
			return nil, fmt.Errorf("--clients: %q is not a number from 1 to 256", f)
		}
		cfg.clients = append(cfg.clients, n)
	}
	switch {
	case cfg.duration <= 0 || cfg.duration > 10*time.Minute:
		return nil, fmt.Errorf("--duration %v must be positive and at most 10m", cfg.duration)
	case cfg.warmup < 0 || cfg.warmup > 10*time.Minute:
		return nil, fmt.Errorf("--warmup %v must lie within 0 and 10m", cfg.warmup)
	case cfg.slice < 10*time.Millisecond || cfg.slice > cfg.duration:
		return nil, fmt.Errorf("--slice %v must be at least 10ms and at most --duration", cfg.slice)
	}
	return cfg, nil
}

// measure starts the two agents and measures every case on them.
func measure(ctx context.Context, cfg *config, progress io.Writer) (res *Results, err error) {
	dir := cfg.dir
	if dir == "" {
		cache, err := os.UserCacheDir()
		if err != nil {
			return nil, fmt.Errorf("no --dir and no user cache directory: %w", err)
		}
		if err := os.MkdirAll(cache, 0o755); err != nil {
			return nil, err
		}
		if dir, err = os.MkdirTemp(cache, "pipeguard-agentload-"); err != nil {
			return nil, err
		}
		defer os.RemoveAll(dir)
	} else if dir, err = os.MkdirTemp(dir, "run-"); err != nil {
		return nil, err
	} else {
		defer os.RemoveAll(dir)
	}
	var targets [2]*target
	for i, name := range []string{"ungated", "gated"} {
		p, err := startChild(ctx, filepath.Join(dir, name), name == "gated")
		if err != nil {
			return nil, errors.Join(err, stopAll(targets))
		}
		targets[i] = &target{name: name, proc: p}
	}
	res = &Results{AuditFilesystem: sysinfo.Filesystem(targets[1].proc.AuditLog), SliceMs: ms(cfg.slice)}
	for _, op := range cfg.ops {
		for _, n := range cfg.clients {
			c, err := measureCase(ctx, targets, op, n, cfg.duration, cfg.warmup, cfg.slice)
			if err != nil {
				return nil, errors.Join(fmt.Errorf("%s with %d clients: %w", op, n, err), stopAll(targets))
			}
			fmt.Fprintf(progress, "%-10s x%-3d ungated %7.0f calls/s p99 %6.3f ms   gated %7.0f calls/s p99 %6.3f ms   overhead %5.1f%%\n",
				op, n, c.Ungated.CallsPerSecond, c.Ungated.P99, c.Gated.CallsPerSecond, c.Gated.P99, c.OverheadPercent)
			res.Cases = append(res.Cases, c)
		}
	}
	return res, stopAll(targets)
}

func stopAll(targets [2]*target) error {
	var errs []error
	for _, t := range targets {
		if t != nil {
			t.close()
			errs = append(errs, t.proc.Stop())
		}
	}
	return errors.Join(errs...)
}

func printTable(w io.Writer, res *Results) {
	fmt.Fprintf(w, "audit log on %s; load alternates between the agents every %.0f ms\n", res.AuditFilesystem, res.SliceMs)
	fmt.Fprintf(w, "%-10s %7s %-8s %9s %7s %8s %8s %8s %8s %7s %8s %8s\n",
		"op", "clients", "agent", "calls/s", "errors", "p50 ms", "p90 ms", "p99 ms", "max ms", "cpu ms", "RSS MiB", "peak MiB")
	for _, c := range res.Cases {
		for _, v := range []struct {
			name string
			s    *Stats
		}{{"ungated", c.Ungated}, {"gated", c.Gated}} {
			fmt.Fprintf(w, "%-10s %7d %-8s %9.0f %7d %8.3f %8.3f %8.3f %8.3f %7.3f %8.1f %8.1f\n",
				c.Op, c.Clients, v.name, v.s.CallsPerSecond, v.s.Errors, v.s.P50, v.s.P90, v.s.P99, v.s.Max,
				v.s.CPUPerCallMs, float64(v.s.RSSBytes)/(1<<20), float64(v.s.PeakRSSBytes)/(1<<20))
		}
	}
	fmt.Fprintln(w, "\ngated vs ungated:")
	for _, c := range res.Cases {
		fmt.Fprintf(w, "  %-10s x%-3d overhead %6.1f%%   p99 %.2fx\n", c.Op, c.Clients, c.OverheadPercent, c.P99Ratio)
	}
	for _, c := range res.Cases {
		for _, s := range []*Stats{c.Ungated, c.Gated} {
			if s.FirstError != "" {
				fmt.Fprintf(w, "%s x%d: %d errors; first: %s\n", c.Op, c.Clients, s.Errors, s.FirstError)
			}
		}
	}
}
