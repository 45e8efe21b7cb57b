package main

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/pipeguard/pipeguard/hack/bench/internal/results"
)

// Result is one measured run, in the file format hack/bench/report reads.
type Result = results.Review

// The closed loop of every run: workers concurrent senders, each sending
// its next review as soon as the last is answered, after warmup of
// unmeasured load of the same kind, so that connections are open and
// caches warm.
const (
	workers = 16
	warmup  = time.Second
)

// Options describe one measured run against one target.
type Options struct {
	// Target is one of allTargets, Mix one of mixes; Round is recorded
	// with the result.
	Target, Mix string
	Round       int
	// Duration of the measured part, after Warmup.
	Duration, Warmup time.Duration
	// gatekeeper is the control plane the gatekeeper target runs on.
	gatekeeper *gatekeeperEnv
}

// Run serves opts.Target over HTTPS on loopback in a process of its own,
// sends it the request mix and returns what it measured.
func Run(ctx context.Context, opts Options) (*Result, error) {
	t := targetOf(opts.Target)
	if t == nil {
		return nil, fmt.Errorf("target %q is unknown", opts.Target)
	}
	m, err := newMix(opts.Mix)
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
	c, err := newClient(srv.URL, srv.CAPEM, m, t.namespaces, rand.Uint32())
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
	PeakRSS() int64
}

// drive warms srv up, then loads it for opts.Duration and summarizes the
// run: reviews/s and the quantiles count correct answers only.
func drive(ctx context.Context, c *client, srv measured, opts Options, t *target) (*Result, error) {
	if opts.Warmup > 0 {
		if w, _ := closedLoop(ctx, c, opts.Warmup); w.sent > len(w.latencies) {
			return nil, fmt.Errorf("warm-up failed: %d errors, first: %s", w.sent-len(w.latencies), w.firstErr)
		}
	}
	cpu := srv.CPU()
	tl, elapsed := closedLoop(ctx, c, opts.Duration)
	cpu = srv.CPU() - cpu
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	r := &Result{
		Target: opts.Target, Mix: opts.Mix, Round: opts.Round, Workers: workers, Namespaces: t.namespaces, Policies: t.policies,
		Seconds: elapsed.Seconds(), Sent: tl.sent, Errors: tl.sent - len(tl.latencies), FirstError: tl.firstErr,
	}
	if tl.sent > 0 {
		r.ReviewBytes = tl.bytes / tl.sent
	}
	if n := len(tl.latencies); n > 0 {
		r.ReviewsPerSecond = float64(n) / elapsed.Seconds()
		r.CPUPerReviewMs = cpu.Seconds() * 1000 / float64(n)
		r.P50, r.P99 = results.Quantile(tl.latencies, 0.50), results.Quantile(tl.latencies, 0.99)
	}
	r.PeakRSSBytes = srv.PeakRSS()
	return r, nil
}

// client sends the request mix to one webhook URL and checks every answer.
type client struct {
	url        string
	http       *http.Client
	mix        *mix
	namespaces int
	// allowAll says the target allows every review.
	allowAll bool
	run      uint32 // distinguishes the UIDs of one run from another's
	seq      atomic.Uint64
}

func newClient(url string, caPEM []byte, m *mix, namespaces int, run uint32) (*client, error) {
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(caPEM) {
		return nil, errors.New("internal error: cannot read the server certificate")
	}
	tr := &http.Transport{
		TLSClientConfig:     &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12},
		MaxIdleConns:        workers,
		MaxIdleConnsPerHost: workers,
		IdleConnTimeout:     90 * time.Second,
		DisableCompression:  true,
	}
	// 10s is the API server's default webhook timeout.
	hc := &http.Client{Transport: tr, Timeout: 10 * time.Second}
	return &client{url: url, http: hc, mix: m, namespaces: namespaces, run: run}, nil
}

func (c *client) close() { c.http.CloseIdleConnections() }

// outcome is what one request came to.
type outcome struct {
	kind *kind
	size int
	err  error
}

// send posts the next request of the mix and checks the answer: status 200,
// the UID echoed, the decision the kind expects, and for a denial a message
// that names the pipe.
func (c *client) send(ctx context.Context) outcome {
	seq := c.seq.Add(1) - 1
	uid := fmt.Sprintf("%08x-0000-4000-8000-%012x", c.run, seq)
	body, k := c.mix.body(seq, c.namespaces, uid)
	out := outcome{kind: k, size: len(body)}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.url, bytes.NewReader(body))
	if err != nil {
		out.err = err
		return out
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := c.http.Do(req)
	if err != nil {
		out.err = err
		return out
	}
	raw, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	switch {
	case err != nil:
		out.err = fmt.Errorf("reading the response: %w", err)
	case resp.StatusCode != http.StatusOK:
		out.err = fmt.Errorf("HTTP %d: %.200s", resp.StatusCode, raw)
	default:
		out.err = check(raw, uid, k.name, k.allowed || c.allowAll)
	}
	return out
}

func check(raw []byte, uid, kind string, allowed bool) error {
	var rr struct {
		Response *struct {
			UID     string `json:"uid"`
			Allowed bool   `json:"allowed"`
			Status  *struct {
				Message string `json:"message"`
			} `json:"status"`
		} `json:"response"`
	}
	if err := json.Unmarshal(raw, &rr); err != nil {
		return fmt.Errorf("decoding the AdmissionReview: %w", err)
	}
	r := rr.Response
	switch {
	case r == nil:
		return errors.New("AdmissionReview has no response")
	case r.UID != uid:
		return fmt.Errorf("response UID %q, want %q", r.UID, uid)
	case r.Allowed != allowed:
		msg := ""
		if r.Status != nil {
			msg = r.Status.Message
		}
		return fmt.Errorf("%s: allowed=%v, want %v (%.200s)", kind, r.Allowed, allowed, msg)
	case !r.Allowed && (r.Status == nil || !strings.Contains(r.Status.Message, "csi-proxy-")):
		return fmt.Errorf("%s: denied without a message naming the pipe", kind)
	}
	return nil
}

// tally collects outcomes and latencies of one run: every request sent,
// the latencies of the correct answers.
type tally struct {
	mu        sync.Mutex
	latencies []time.Duration
	sent      int
	bytes     int
	firstErr  string
}

func (t *tally) record(o outcome, latency time.Duration) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.sent++
	t.bytes += o.size
	switch {
	case o.err == nil:
		t.latencies = append(t.latencies, latency)
	case t.firstErr == "":
		t.firstErr = o.err.Error()
	}
}

// closedLoop runs workers that each send a request as soon as the previous
// one is answered, until d has passed.
func closedLoop(ctx context.Context, c *client, d time.Duration) (*tally, time.Duration) {
	t := &tally{latencies: make([]time.Duration, 0, 1<<16)}
	ctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	var wg sync.WaitGroup
	start := time.Now()
	for range workers {
		wg.Go(func() {
			for ctx.Err() == nil {
				begin := time.Now()
				o := c.send(context.WithoutCancel(ctx))
				t.record(o, time.Since(begin))
			}
		})
	}
	wg.Wait()
	return t, time.Since(start)
}
