package main

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"runtime"
	"runtime/debug"
	"time"

	"github.com/pipeguard/pipeguard/hack/bench/internal/sysinfo"
)

// Limits keep a run bounded in time and in the load it puts on the machine.
const (
	maxRate         = 50000
	maxWorkers      = 1024
	maxDuration     = 10 * time.Minute
	maxPolicies     = 1000
	defaultInFlight = 256
)

// Options describe one measured run against one target.
type Options struct {
	// Target is TargetPipeguard, TargetUncached or TargetBaseline.
	Target string
	// Rate, when positive, runs open loop at this many reviews per second.
	Rate int
	// Workers, when positive and Rate is zero, runs closed loop with this
	// many concurrent senders.
	Workers int
	// Duration of the measured part; Requests, if positive, also bounds
	// the number of requests sent.
	Duration time.Duration
	Requests int
	// Warmup is load of the same kind, sent first and not measured, so
	// that connections are open and caches warm.
	Warmup time.Duration
	// MaxInFlight bounds outstanding open-loop requests; more are dropped.
	MaxInFlight int
	// Namespaces is how many namespaces the lookup holds (at least 2).
	Namespaces int
	// Policies is how many PipeAccessPolicies pipeguard loads; 0 keeps the
	// built-in default policy.
	Policies int
	// HTTP2 lets the client negotiate HTTP/2 with the server.
	HTTP2 bool
	// InProcess serves the target in this process instead of a process of
	// its own; CPU time and RSS are then the whole process's.
	InProcess bool
}

func (o *Options) validate() error {
	switch {
	case !knownTarget(o.Target):
		return fmt.Errorf("target %q is unknown; use %s", o.Target, targetNames)
	case o.Rate < 0 || o.Rate > maxRate:
		return fmt.Errorf("rate %d is out of range; use 1 to %d reviews/s", o.Rate, maxRate)
	case o.Rate == 0 && (o.Workers <= 0 || o.Workers > maxWorkers):
		return fmt.Errorf("closed-loop workers %d is out of range; use 1 to %d, or set a rate", o.Workers, maxWorkers)
	case o.Duration <= 0 || o.Duration > maxDuration || o.Warmup < 0 || o.Warmup > maxDuration:
		return fmt.Errorf("duration %v and warmup %v must lie within 0 and %v, with a positive duration", o.Duration, o.Warmup, maxDuration)
	case o.Namespaces < 2 || o.Namespaces > maxNamespaces:
		return fmt.Errorf("namespaces %d is out of range; use 2 to %d", o.Namespaces, maxNamespaces)
	case o.Policies < 0 || o.Policies > maxPolicies:
		return fmt.Errorf("policies %d is out of range; use 0 to %d", o.Policies, maxPolicies)
	}
	if o.MaxInFlight <= 0 {
		o.MaxInFlight = defaultInFlight
	}
	return nil
}

// Run serves opts.Target over HTTPS on loopback, in a process of its own
// unless opts.InProcess, sends it the request mix and returns what it
// measured.
func Run(ctx context.Context, opts Options) (*Result, error) {
	if err := opts.validate(); err != nil {
		return nil, err
	}
	m, err := newMix()
	if err != nil {
		return nil, err
	}
	ep, err := serve(ctx, opts)
	if err != nil {
		return nil, err
	}
	url, caPEM := ep.address()
	conns := max(opts.MaxInFlight, opts.Workers)
	c, err := newClient(url, caPEM, m, opts.Namespaces, conns, opts.HTTP2, rand.Uint32())
	if err != nil {
		return nil, errors.Join(err, ep.Stop())
	}
	res, err := drive(ctx, c, ep, opts)
	c.close()
	if stopErr := ep.Stop(); err == nil && stopErr != nil {
		err = fmt.Errorf("stopping the webhook server: %w", stopErr)
	}
	return res, err
}

// serve starts the webhook server of opts.Target.
func serve(ctx context.Context, opts Options) (endpoint, error) {
	if !opts.InProcess {
		return startChild(ctx, opts)
	}
	// Start from a collected heap so that the RSS reflects this target.
	runtime.GC()
	debug.FreeOSMemory()
	h, err := newHandler(ctx, opts.Target, namespaces(opts.Namespaces), opts.Policies)
	if err != nil {
		return nil, err
	}
	srv, err := startServer(ctx, h)
	if err != nil {
		return nil, fmt.Errorf("starting the webhook server: %w", err)
	}
	return inProcess{srv}, nil
}

func drive(ctx context.Context, c *client, ep endpoint, opts Options) (*Result, error) {
	measure := func(d time.Duration, limit int) (*tally, time.Duration) {
		if opts.Rate > 0 {
			n := int(d.Seconds() * float64(opts.Rate))
			if limit > 0 {
				n = min(n, limit)
			}
			return openLoop(ctx, c, opts.Rate, max(n, 1), opts.MaxInFlight)
		}
		return closedLoop(ctx, c, opts.Workers, d, limit)
	}
	if opts.Warmup > 0 {
		if t, _ := measure(opts.Warmup, 0); len(t.errors) > 0 {
			return nil, fmt.Errorf("warm-up failed: %d errors, first: %s", t.sent-len(t.latencies), t.firstErr)
		}
	}
	serverCPU, selfCPU, ticks := ep.CPU(), sysinfo.CPUTime(sysinfo.Self), sysinfo.ReadCPUTicks()
	t, elapsed := measure(opts.Duration, opts.Requests)
	serverCPU, selfCPU = ep.CPU()-serverCPU, sysinfo.CPUTime(sysinfo.Self)-selfCPU
	steal := sysinfo.StealPercent(ticks, sysinfo.ReadCPUTicks())
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	r := summarize(opts, t, elapsed, serverCPU)
	r.RSSBytes, r.PeakRSSBytes = ep.Memory()
	r.StealPercent = steal
	if !opts.InProcess && elapsed > 0 {
		r.LoadCoresUsed = selfCPU.Seconds() / elapsed.Seconds()
	}
	return r, nil
}
