package main

import (
	"cmp"
	"context"
	"fmt"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	fsv1 "github.com/kubernetes-csi/csi-proxy/client/api/filesystem/v1"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/pipeguard/pipeguard/agent/server"
	"github.com/pipeguard/pipeguard/hack/bench/internal/results"
)

// Operations measured.
const (
	OpPathExists = "PathExists"
	OpMkdir      = "Mkdir"
)

// target is one agent under load and the connections to it, one per
// client.
type target struct {
	name    string // agentUngated, agentGated or agentFsyncOnly
	proc    *child
	conns   []*grpc.ClientConn
	clients []fsv1.FilesystemClient
	seq     atomic.Uint64 // names the directories Mkdir creates
}

// connect opens n connections to the filesystem v1 socket and makes one
// call on each, so that they are up before anything is measured.
func (t *target) connect(n int) error {
	addr := "unix://" + server.SocketPath(t.proc.SocketDir, "filesystem", "v1")
	for len(t.conns) < n {
		conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
		if err != nil {
			return err
		}
		c := fsv1.NewFilesystemClient(conn)
		t.conns, t.clients = append(t.conns, conn), append(t.clients, c)
		if err := t.call(OpPathExists)(c); err != nil {
			return fmt.Errorf("%s agent: first call: %w", t.name, err)
		}
	}
	return nil
}

// call returns a function making one op call. PathExists asks about a
// directory that exists; Mkdir creates a new directory each time.
func (t *target) call(op string) func(fsv1.FilesystemClient) error {
	exists := &fsv1.PathExistsRequest{Path: filepath.Join(t.proc.Kubelet, "pods")}
	return func(c fsv1.FilesystemClient) error {
		if op == OpMkdir {
			path := filepath.Join(t.proc.Kubelet, "pods", fmt.Sprintf("d%08d", t.seq.Add(1)))
			_, err := c.Mkdir(context.Background(), &fsv1.MkdirRequest{Path: path})
			return err
		}
		r, err := c.PathExists(context.Background(), exists)
		if err == nil && !r.Exists {
			err = fmt.Errorf("%s does not exist", exists.Path)
		}
		return err
	}
}

// tally collects one target's calls over the slices of a case.
type tally struct {
	latencies []time.Duration
	errors    int
	firstErr  string
	elapsed   time.Duration
	cpu       time.Duration
}

// add counts r's calls in t as well.
func (t *tally) add(r *tally) {
	t.latencies = append(t.latencies, r.latencies...)
	t.errors += r.errors
	t.elapsed += r.elapsed
	t.cpu += r.cpu
	t.firstErr = cmp.Or(t.firstErr, r.firstErr)
}

// slice runs clients closed-loop workers against t for d: each makes a
// call as soon as its previous one is answered.
func (t *target) slice(op string, clients int, d time.Duration, into *tally) {
	f := t.call(op)
	cpu, start := t.proc.CPU(), time.Now()
	workers := make([]tally, clients)
	var wg sync.WaitGroup
	for i := range workers {
		w, c := &workers[i], t.clients[i]
		wg.Go(func() {
			for time.Since(start) < d {
				begin := time.Now()
				if err := f(c); err != nil {
					w.errors++
					w.firstErr = cmp.Or(w.firstErr, err.Error())
					continue
				}
				w.latencies = append(w.latencies, time.Since(begin))
			}
		})
	}
	wg.Wait()
	for i := range workers {
		into.add(&workers[i])
	}
	into.elapsed += time.Since(start)
	into.cpu += t.proc.CPU() - cpu
}

// measureCase loads the targets (ungated, gated and, for a mutating op,
// fsync-only) with the same op and number of clients, alternating between
// them in slices (in an order that rotates from round to round) so that
// all see the same machine, until each has been measured for d, and judges
// the gated agent by medians of per-round values: its calls/s over the
// ungated agent's and, for a mutating op, its p50 less and over the
// fsync-only agent's. Warm-up slices come first and are not counted.
func measureCase(ctx context.Context, targets []*target, op string, clients int, d, warmup time.Duration) (*results.AgentCase, error) {
	for _, t := range targets {
		if err := t.connect(clients); err != nil {
			return nil, err
		}
	}
	var scratch tally
	for w := time.Duration(0); w < warmup && ctx.Err() == nil; w += slice {
		for _, t := range targets {
			t.slice(op, clients, min(slice, warmup-w), &scratch)
		}
	}
	tallies := make([]tally, len(targets))
	c := &results.AgentCase{Op: op, Clients: clients}
	var ratios, overFsync, toFsync []float64
	for ; ctx.Err() == nil; c.Rounds++ {
		left := d - tallies[0].elapsed
		if left <= 0 {
			break
		}
		round := make([]tally, len(targets))
		for j := range targets {
			i := (j + c.Rounds) % len(targets)
			targets[i].slice(op, clients, min(slice, left), &round[i])
		}
		u, g := summarize(&round[0], nil), summarize(&round[1], nil)
		if u.CallsPerSecond > 0 {
			ratios = append(ratios, g.CallsPerSecond/u.CallsPerSecond)
		}
		if f := summarize(&round[len(round)-1], nil); len(round) > 2 && f.P50 > 0 {
			overFsync, toFsync = append(overFsync, g.P50-f.P50), append(toFsync, g.P50/f.P50)
		}
		for i := range tallies {
			tallies[i].add(&round[i])
		}
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	c.Ungated = summarize(&tallies[0], targets[0].proc)
	c.Gated = summarize(&tallies[1], targets[1].proc)
	if len(targets) > 2 {
		c.FsyncOnly = summarize(&tallies[2], targets[2].proc)
	}
	c.Ratio, c.OverFsyncOnly, c.FsyncOnlyRatio = results.Median(ratios), results.Median(overFsync), results.Median(toFsync)
	return c, nil
}

func summarize(t *tally, p *child) *results.AgentStats {
	s := &results.AgentStats{Calls: len(t.latencies) + t.errors, Errors: t.errors, FirstError: t.firstErr, Seconds: t.elapsed.Seconds()}
	if t.elapsed > 0 {
		s.CallsPerSecond = float64(len(t.latencies)) / t.elapsed.Seconds()
		s.CoresUsed = t.cpu.Seconds() / t.elapsed.Seconds()
	}
	if n := len(t.latencies); n > 0 {
		s.P50, s.P99 = results.Quantile(t.latencies, 0.50), results.Quantile(t.latencies, 0.99)
		s.CPUPerCallMs = t.cpu.Seconds() * 1000 / float64(n)
	}
	if p != nil {
		s.PeakRSSBytes = p.PeakRSS()
	}
	return s
}
