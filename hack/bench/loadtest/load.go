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

	admissionv1 "k8s.io/api/admission/v1"

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

// Options describe one measured run: Target (one of allTargets) with Mix
// (one of mixes) for Duration after Warmup, in Round; gatekeeper is the
// control plane the gatekeeper targets run on.
type Options struct {
	Target, Mix      string
	Round            int
	Duration, Warmup time.Duration
	gatekeeper       *gatekeeperEnv
}

// Run serves opts.Target over HTTPS on loopback in a process of its own,
// sends it the request mix and returns what it measured. Gatekeeper is
// measured only once it decides every kind of review of the mix as
// pipeguard does (the denied kinds are denied once the constraint is in
// force); a rule that decides any kind otherwise is reported instead.
func Run(ctx context.Context, opts Options) (_ *Result, err error) {
	t := targetOf(opts.Target)
	if t == nil {
		return nil, fmt.Errorf("target %q is unknown", opts.Target)
	}
	m, err := newMix(opts.Mix)
	if err != nil {
		return nil, err
	}
	srv, at, err := start(ctx, opts, t)
	if err != nil {
		return nil, err
	}
	defer func() {
		if stopErr := srv.Stop(); stopErr != nil {
			err = errors.Join(err, fmt.Errorf("stopping %s: %w", map[bool]string{false: "the webhook server", true: "gatekeeper"}[t.peer], stopErr))
		}
	}()
	c, err := newClient(at, m, t.namespaces, rand.Uint32())
	if err != nil {
		return nil, err
	}
	defer c.http.CloseIdleConnections()
	c.allowAll = t.allowAll
	if gk, ok := srv.(*gatekeeperProc); ok {
		if err := gk.retry(ctx, "did not decide the mix as pipeguard does, so it is not measured,", func() error { return decideEveryKind(ctx, c, m) }); err != nil {
			return nil, err
		}
	}
	return drive(ctx, c, srv, opts, t)
}

// process is a serving process whose resources a run measures.
type process interface {
	CPU() time.Duration
	PeakRSS() int64
	Stop() error
}

// start starts the process that serves t: the serve subcommand, or for a
// peer, Gatekeeper on opts.gatekeeper's control plane.
func start(ctx context.Context, opts Options, t *target) (process, serving, error) {
	if !t.peer {
		c, err := startChild(ctx, t.name)
		if err != nil {
			return nil, serving{}, err
		}
		return c, c.serving, nil
	}
	if opts.gatekeeper == nil {
		return nil, serving{}, fmt.Errorf("the %s target needs its control plane, which was not started", TargetGatekeeper)
	}
	p, err := opts.gatekeeper.launch(t.gogc, "webhook")
	if err != nil {
		return nil, serving{}, err
	}
	return p, p.serving, nil
}

// decideEveryKind sends one request of each slot of the mix and returns the
// first wrong answer.
func decideEveryKind(ctx context.Context, c *client, m *mix) error {
	for range m.slots {
		if k, _, err := c.send(ctx); err != nil {
			return fmt.Errorf("%s: %w", k.name, err)
		}
	}
	return nil
}

// drive warms srv up, then loads it for opts.Duration and summarizes the
// run: reviews/s and the quantiles count correct answers only.
func drive(ctx context.Context, c *client, srv process, opts Options, t *target) (*Result, error) {
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
		Seconds: elapsed.Seconds(), Sent: tl.sent, Errors: tl.sent - len(tl.latencies), FirstError: tl.firstErr, PeakRSSBytes: srv.PeakRSS(),
	}
	if tl.sent > 0 {
		r.ReviewBytes = tl.bytes / tl.sent
	}
	if n := len(tl.latencies); n > 0 {
		r.ReviewsPerSecond = float64(n) / elapsed.Seconds()
		r.CPUPerReviewMs = cpu.Seconds() * 1000 / float64(n)
		r.P50, r.P99 = results.Quantile(tl.latencies, 0.50), results.Quantile(tl.latencies, 0.99)
	}
	return r, nil
}

// client sends the request mix to one webhook and checks every answer.
type client struct {
	url        string
	http       *http.Client
	mix        *mix
	namespaces int
	allowAll   bool   // the target allows every review
	run        uint32 // distinguishes the UIDs of one run from another's
	seq        atomic.Uint64
}

func newClient(at serving, m *mix, namespaces int, run uint32) (*client, error) {
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(at.CAPEM) {
		return nil, errors.New("internal error: cannot read the server certificate")
	}
	tr := &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12},
		MaxIdleConns: workers, MaxIdleConnsPerHost: workers, IdleConnTimeout: 90 * time.Second, DisableCompression: true}
	// 10s is the API server's default webhook timeout.
	return &client{url: at.URL, http: &http.Client{Transport: tr, Timeout: 10 * time.Second}, mix: m, namespaces: namespaces, run: run}, nil
}

// send posts the next request of the mix and checks the answer: status 200,
// the UID echoed, the decision the kind expects, and for a denial a message
// that names the pipe. It returns the kind and the size of the request.
func (c *client) send(ctx context.Context) (*kind, int, error) {
	seq := c.seq.Add(1) - 1
	uid := fmt.Sprintf("%08x-0000-4000-8000-%012x", c.run, seq)
	body, k := c.mix.body(seq, c.namespaces, uid)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.url, bytes.NewReader(body))
	if err != nil {
		return k, len(body), err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := c.http.Do(req)
	if err != nil {
		return k, len(body), err
	}
	raw, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	switch {
	case err != nil:
		return k, len(body), fmt.Errorf("reading the response: %w", err)
	case resp.StatusCode != http.StatusOK:
		return k, len(body), fmt.Errorf("HTTP %d: %.200s", resp.StatusCode, raw)
	}
	return k, len(body), check(raw, uid, k.name, k.allowed || c.allowAll)
}

// check checks an AdmissionReview's answer.
func check(raw []byte, uid, kind string, allowed bool) error {
	var rr admissionv1.AdmissionReview
	if err := json.Unmarshal(raw, &rr); err != nil {
		return fmt.Errorf("decoding the AdmissionReview: %w", err)
	}
	r, msg := rr.Response, ""
	if r != nil && r.Result != nil {
		msg = r.Result.Message
	}
	switch {
	case r == nil:
		return errors.New("AdmissionReview has no response")
	case string(r.UID) != uid:
		return fmt.Errorf("response UID %q, want %q", r.UID, uid)
	case r.Allowed != allowed:
		return fmt.Errorf("%s: allowed=%v, want %v (%.200s)", kind, r.Allowed, allowed, msg)
	case !r.Allowed && !strings.Contains(msg, "csi-proxy-"):
		return fmt.Errorf("%s: denied without a message naming the pipe", kind)
	}
	return nil
}

// tally collects what one run sent and the latencies of the correct
// answers.
type tally struct {
	mu          sync.Mutex
	latencies   []time.Duration
	sent, bytes int
	firstErr    string
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
				_, size, err := c.send(context.WithoutCancel(ctx))
				latency := time.Since(begin)
				t.mu.Lock()
				t.sent, t.bytes = t.sent+1, t.bytes+size
				if err == nil {
					t.latencies = append(t.latencies, latency)
				} else if t.firstErr == "" {
					t.firstErr = err.Error()
				}
				t.mu.Unlock()
			}
		})
	}
	wg.Wait()
	return t, time.Since(start)
}
