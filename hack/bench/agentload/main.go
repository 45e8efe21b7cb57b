// Command agentload measures what pipeguard-agent's gate and audit log cost
// a CSI driver: calls/s and latency of filesystem v1 PathExists (a read)
// and Mkdir (a mutating call, whose write-ahead audit record is synced to
// disk before the directory is made), each with 1 and 16 concurrent
// clients, through real unix sockets, on an agent that gates and audits
// every request as pipeguard-agent does (the shipped rules, Metadata level,
// the default durability), on one that does neither and, for Mkdir, on one
// that only writes a record through the audit log writer and waits for its
// fsync before each call, committing in groups. Each runs in a
// process of its own (this executable, re-run with a hidden serve command);
// the load alternates between them in slices of 250 ms, so all see one machine.
//
//	go run ./hack/bench/agentload --duration 5s --json agent.json
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
	"time"

	"github.com/pipeguard/pipeguard/hack/bench/internal/results"
	"github.com/pipeguard/pipeguard/hack/bench/internal/sysinfo"
)

// The cases measured: every op with every number of concurrent clients,
// each client on its own connection, the load moving from one agent to the
// other every slice.
var (
	ops     = []string{OpPathExists, OpMkdir}
	clients = []int{1, 16}
)

const slice = 250 * time.Millisecond

// config is the command line.
type config struct {
	duration time.Duration
	warmup   time.Duration
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
	res, err := measure(ctx, cfg, stdout)
	if err != nil {
		fmt.Fprintln(stderr, "agentload:", err)
		return 1
	}
	if cfg.jsonPath != "" {
		out, _ := json.MarshalIndent(res, "", "  ")
		if err := os.WriteFile(cfg.jsonPath, append(out, '\n'), 0o644); err != nil {
			fmt.Fprintln(stderr, "agentload:", err)
			return 1
		}
	}
	for _, c := range res.Cases {
		if c.Ungated.Errors+c.Gated.Errors > 0 || c.FsyncOnly != nil && c.FsyncOnly.Errors > 0 {
			return 1
		}
	}
	return 0
}

func parseFlags(args []string) (*config, error) {
	fs := flag.NewFlagSet("agentload", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	cfg := &config{}
	fs.DurationVar(&cfg.duration, "duration", 5*time.Second, "measured time of each agent in each case")
	fs.DurationVar(&cfg.warmup, "warmup", time.Second, "unmeasured load on each agent before each case")
	fs.StringVar(&cfg.dir, "dir", "", "directory for the kubelet directories and the audit log, on the disk to measure (default: the user cache directory); a new directory in it is removed afterwards")
	fs.StringVar(&cfg.jsonPath, "json", "", "also write the results as JSON to this file")
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	var err error
	switch {
	case fs.NArg() > 0:
		return nil, fmt.Errorf("unexpected arguments %q; every setting is a flag", fs.Args())
	case cfg.duration <= 0 || cfg.duration > 10*time.Minute:
		return nil, fmt.Errorf("--duration %v must be positive and at most 10m", cfg.duration)
	case cfg.warmup < 0 || cfg.warmup > 10*time.Minute:
		return nil, fmt.Errorf("--warmup %v must lie within 0 and 10m", cfg.warmup)
	case cfg.dir == "":
		cfg.dir, err = os.UserCacheDir()
	}
	if err == nil {
		cfg.dir, err = filepath.Abs(cfg.dir)
	}
	return cfg, err
}

// measure starts the agents and measures every case on them, printing
// each case to out as it is measured.
func measure(ctx context.Context, cfg *config, out io.Writer) (*results.AgentResults, error) {
	if err := os.MkdirAll(cfg.dir, 0o755); err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp(cfg.dir, "pipeguard-agentload-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	var targets [3]*target
	stopAll := func() error {
		var errs []error
		for _, t := range targets {
			if t != nil {
				for _, c := range t.conns {
					c.Close()
				}
				errs = append(errs, t.proc.Stop())
			}
		}
		return errors.Join(errs...)
	}
	for i, name := range []string{agentUngated, agentGated, agentFsyncOnly} {
		p, err := startChild(ctx, filepath.Join(dir, name), name)
		if err != nil {
			return nil, errors.Join(err, stopAll())
		}
		targets[i] = &target{name: name, proc: p}
	}
	res := &results.AgentResults{AuditFilesystem: sysinfo.Filesystem(targets[1].proc.AuditLog), SliceMs: results.Ms(slice)}
	fmt.Fprintf(out, "audit log on %s; load alternates between the agents every %v\n", res.AuditFilesystem, slice)
	for _, op := range ops {
		for _, n := range clients {
			measured := targets[:2]
			if op == OpMkdir {
				measured = targets[:]
			}
			c, err := measureCase(ctx, measured, op, n, cfg.duration, cfg.warmup)
			if err != nil {
				return nil, errors.Join(fmt.Errorf("%s with %d clients: %w", op, n, err), stopAll())
			}
			fmt.Fprintf(out, "%-10s x%-3d ungated %7.0f calls/s p50 %6.3f ms   gated %7.0f calls/s p50 %6.3f ms   gated/ungated %.3f× (median of %d rounds)",
				op, n, c.Ungated.CallsPerSecond, c.Ungated.P50, c.Gated.CallsPerSecond, c.Gated.P50, c.Ratio, c.Rounds)
			if c.FsyncOnly != nil {
				fmt.Fprintf(out, "   fsync-only p50 %.3f ms; gated − fsync-only %.3f ms, gated ÷ fsync-only %.2f× (medians)", c.FsyncOnly.P50, c.OverFsyncOnly, c.FsyncOnlyRatio)
			}
			fmt.Fprintln(out)
			for _, s := range []*results.AgentStats{c.Ungated, c.Gated, c.FsyncOnly} {
				if s != nil && s.FirstError != "" {
					fmt.Fprintf(out, "%s x%d: %d errors; first: %s\n", op, n, s.Errors, s.FirstError)
				}
			}
			res.Cases = append(res.Cases, c)
		}
	}
	return res, stopAll()
}
