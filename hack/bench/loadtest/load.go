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
	// allowAll says the target allows every review.
	allowAll bool
	run      uint32 // distinguishes the UIDs of one run from another's
	seq      atomic.Uint64
}

func newClient(url string, caPEM []byte, m *mix, namespaces, conns int, run uint32) (*client, error) {
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(caPEM) {
		return nil, errors.New("internal error: cannot read the server certificate")
	}
	tr := &http.Transport{
		TLSClientConfig:     &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12},
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
	size    int
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
		out.allowed, out.err = check(raw, uid, k.name, k.allowed || c.allowAll)
	}
	return out
}

func check(raw []byte, uid, kind string, allowed bool) (bool, error) {
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
	case r.Allowed != allowed:
		msg := ""
		if r.Status != nil {
			msg = r.Status.Message
		}
		return r.Allowed, fmt.Errorf("%s: allowed=%v, want %v (%.200s)", kind, r.Allowed, allowed, msg)
	case !r.Allowed && (r.Status == nil || !strings.Contains(r.Status.Message, "csi-proxy-")):
		return false, fmt.Errorf("%s: denied without a message naming the pipe", kind)
	}
	return r.Allowed, nil
}

// tally collects outcomes and latencies of one run.
type tally struct {
	mu        sync.Mutex
	latencies []time.Duration
	sent      int
	bytes     int
	errors    map[string]int
	firstErr  string
	decisions map[string]*Decisions
}

func (t *tally) record(o outcome, latency time.Duration) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.sent++
	t.bytes += o.size
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
	if o.allowed {
		d.Allowed++
	} else {
		d.Denied++
	}
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

// closedLoop runs workers that each send a request as soon as the previous
// one is answered, until d has passed or limit requests were sent.
func closedLoop(ctx context.Context, c *client, workers int, d time.Duration, limit int) (*tally, time.Duration) {
	t := &tally{latencies: make([]time.Duration, 0, 1<<16), errors: map[string]int{}, decisions: map[string]*Decisions{}}
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
				t.record(o, time.Since(begin))
			}
		}()
	}
	wg.Wait()
	return t, time.Since(start)
}
