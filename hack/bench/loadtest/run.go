package main

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"
)

// Limits keep a run bounded in time and in the load it puts on the machine.
const (
	maxWorkers  = 1024
	maxDuration = 10 * time.Minute
)

// Options describe one measured run against one target.
type Options struct {
	// Target is one of allTargets; Round is recorded with the result.
	Target string
	Round  int
	// Workers is how many concurrent senders the closed loop runs.
	Workers int
	// Duration of the measured part; Requests, if positive, also bounds
	// the number of requests sent.
	Duration time.Duration
	Requests int
	// Warmup is load of the same kind, sent first and not measured, so
	// that connections are open and caches warm.
	Warmup time.Duration
	// gatekeeper is the control plane the gatekeeper target runs on.
	gatekeeper *gatekeeperEnv
}

func (o *Options) validate() error {
	switch {
	case targetOf(o.Target) == nil:
		return fmt.Errorf("target %q is unknown", o.Target)
	case o.Workers <= 0 || o.Workers > maxWorkers:
		return fmt.Errorf("workers %d is out of range; use 1 to %d", o.Workers, maxWorkers)
	case o.Duration <= 0 || o.Duration > maxDuration || o.Warmup < 0 || o.Warmup > maxDuration:
		return fmt.Errorf("duration %v and warmup %v must lie within 0 and %v, with a positive duration", o.Duration, o.Warmup, maxDuration)
	}
	return nil
}

// Run serves opts.Target over HTTPS on loopback in a process of its own,
// sends it the request mix and returns what it measured.
func Run(ctx context.Context, opts Options) (*Result, error) {
	if err := opts.validate(); err != nil {
		return nil, err
	}
	t := targetOf(opts.Target)
	m, err := newMix()
	if err != nil {
		return nil, err
	}
	if t.peer {
		return runGatekeeper(ctx, opts.gatekeeper, opts, t, m)
	}
	srv, err := startChild(ctx, opts.Target)
	if err != nil {
		return nil, err
	}
	c, err := newClient(srv.URL, srv.CAPEM, m, t.namespaces, opts.Workers, rand.Uint32())
	if err != nil {
		return nil, errors.Join(err, srv.Stop())
	}
	c.allowAll = t.allowAll
	res, err := drive(ctx, c, srv, opts, t)
	c.close()
	if stopErr := srv.Stop(); err == nil && stopErr != nil {
		err = fmt.Errorf("stopping the webhook server: %w", stopErr)
	}
	return res, err
}

// measured is a serving process whose resources a run measures.
type measured interface {
	CPU() time.Duration
	Memory() (rss, hwm int64)
}

func drive(ctx context.Context, c *client, srv measured, opts Options, t *target) (*Result, error) {
	if opts.Warmup > 0 {
		if w, _ := closedLoop(ctx, c, opts.Workers, opts.Warmup, 0); len(w.errors) > 0 {
			return nil, fmt.Errorf("warm-up failed: %d errors, first: %s", w.sent-len(w.latencies), w.firstErr)
		}
	}
	cpu := srv.CPU()
	tl, elapsed := closedLoop(ctx, c, opts.Workers, opts.Duration, opts.Requests)
	cpu = srv.CPU() - cpu
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	r := summarize(opts, t, tl, elapsed, cpu)
	_, r.PeakRSSBytes = srv.Memory()
	return r, nil
}
