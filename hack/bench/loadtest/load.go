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
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// client sends the request mix to one webhook URL and checks every answer.
type client struct {
	url        string
	http       *http.Client
	mix        *mix
	namespaces int
	run        uint32 // distinguishes the UIDs of one run from another's
	seq        atomic.Uint64
}

func newClient(url string, caPEM []byte, m *mix, namespaces, conns int, http2 bool, run uint32) (*client, error) {
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(caPEM) {
		return nil, errors.New("internal error: cannot read the server certificate")
	}
	tr := &http.Transport{
		TLSClientConfig:     &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12},
		ForceAttemptHTTP2:   http2,
		MaxIdleConns:        conns,
		MaxIdleConnsPerHost: conns,
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
	kind    *kind
	allowed bool
	err     error
}

// reviewResponse holds the fields of an AdmissionReview response that are
// checked.
type reviewResponse struct {
	Response *struct {
		UID     string `json:"uid"`
		Allowed bool   `json:"allowed"`
		Status  *struct {
			Code    int    `json:"code"`
			Message string `json:"message"`
		} `json:"status"`
	} `json:"response"`
}

// send posts the next request of the mix and checks the answer: status 200,
// the UID echoed, the decision the kind expects, and for a denial a message
// that names the pipe.
func (c *client) send(ctx context.Context) outcome {
	seq := c.seq.Add(1) - 1
	uid := fmt.Sprintf("%08x-0000-4000-8000-%012x", c.run, seq)
	body, k := c.mix.body(seq, c.namespaces, uid)
	out := outcome{kind: k}
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
		out.allowed, out.err = check(raw, uid, k)
	}
	return out
}

func check(raw []byte, uid string, k *kind) (bool, error) {
	var rr reviewResponse
	if err := json.Unmarshal(raw, &rr); err != nil {
		return false, fmt.Errorf("decoding the AdmissionReview: %w", err)
	}
	r := rr.Response
	switch {
	case r == nil:
		return false, errors.New("AdmissionReview has no response")
	case r.UID != uid:
		return r.Allowed, fmt.Errorf("response UID %q, want %q", r.UID, uid)
	case r.Allowed != k.allowed:
		msg := ""
		if r.Status != nil {
			msg = r.Status.Message
		}
		return r.Allowed, fmt.Errorf("%s: allowed=%v, want %v (%.200s)", k.name, r.Allowed, k.allowed, msg)
	case !r.Allowed && (r.Status == nil || !strings.Contains(r.Status.Message, "csi-proxy-")):
		return false, fmt.Errorf("%s: denied without a message naming the pipe", k.name)
	}
	return r.Allowed, nil
}

// tally collects outcomes and latencies of one run.
type tally struct {
	mu        sync.Mutex
	latencies []time.Duration
	// lags are, in open loop, how late each request left after it was
	// due: the load generator's own delay, which latencies include;
	// service holds latencies counted from when requests left.
	lags      []time.Duration
	service   []time.Duration
	sent      int
	dropped   int
	errors    map[string]int
	firstErr  string
	decisions map[string]*Decisions
}

func newTally(capacity int) *tally {
	return &tally{latencies: make([]time.Duration, 0, capacity), errors: map[string]int{}, decisions: map[string]*Decisions{}}
}

func (t *tally) record(o outcome, latency, lag time.Duration) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.sent++
	t.lags = append(t.lags, lag)
	d := t.decisions[o.kind.name]
	if d == nil {
		d = &Decisions{}
		t.decisions[o.kind.name] = d
	}
	if o.err != nil {
		d.Errors++
		t.errors[errorClass(o.err)]++
		if t.firstErr == "" {
			t.firstErr = o.err.Error()
		}
		return
	}
	t.latencies = append(t.latencies, latency)
	t.service = append(t.service, latency-lag)
	if o.allowed {
		d.Allowed++
	} else {
		d.Denied++
	}
}

func (t *tally) drop() {
	t.mu.Lock()
	t.dropped++
	t.mu.Unlock()
}

func errorClass(err error) string {
	var ue interface{ Timeout() bool }
	switch {
	case errors.As(err, &ue) && ue.Timeout():
		return "timeout"
	case strings.HasPrefix(err.Error(), "HTTP "):
		return "http-status"
	case strings.Contains(err.Error(), "allowed="):
		return "wrong-decision"
	case strings.Contains(err.Error(), "UID"):
		return "wrong-uid"
	}
	return "other"
}

// openLoop sends n requests at a fixed arrival rate. Request i is due at
// start + i/rate whatever happened to the ones before it, and its latency
// counts from then, so a stalled server shows in the latencies instead of
// slowing the sender down (no coordinated omission). A request due while
// maxInFlight are outstanding is dropped and counted.
func openLoop(ctx context.Context, c *client, rate, n, maxInFlight int) (*tally, time.Duration) {
	t := newTally(n)
	interval := time.Second / time.Duration(rate)
	slots := make(chan struct{}, maxInFlight)
	var wg sync.WaitGroup
	p := newPacer()
	defer p.stop()
	start := time.Now()
	for i := 0; i < n && ctx.Err() == nil; i++ {
		due := start.Add(time.Duration(i) * interval)
		p.until(due)
		select {
		case slots <- struct{}{}:
		default:
			t.drop()
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			lag := time.Since(due)
			o := c.send(ctx)
			t.record(o, time.Since(due), lag)
			<-slots
		}()
	}
	wg.Wait()
	return t, time.Since(start)
}

// closedLoop runs workers that each send a request as soon as the previous
// one is answered, until d has passed or limit requests were sent.
func closedLoop(ctx context.Context, c *client, workers int, d time.Duration, limit int) (*tally, time.Duration) {
	t := newTally(1 << 16)
	ctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	var issued atomic.Int64
	var wg sync.WaitGroup
	start := time.Now()
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil && (limit <= 0 || issued.Add(1) <= int64(limit)) {
				begin := time.Now()
				o := c.send(context.WithoutCancel(ctx))
				t.record(o, time.Since(begin), 0)
			}
		}()
	}
	wg.Wait()
	return t, time.Since(start)
}
