package app

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"testing"
	"time"

	fsv1 "github.com/kubernetes-csi/csi-proxy/client/api/filesystem/v1"
)

// floodDeadline bounds every wait of the flood tests: generous, since the
// machine may be busy; the tests wait on events, not on it.
const floodDeadline = 60 * time.Second

// floodBounds are the agent's caps with timeouts short enough that a flood
// many times the cap drains within a test.
func floodBounds() *httpBounds {
	b := defaultHTTPBounds()
	for _, p := range []*portBounds{&b.Probes, &b.Metrics} {
		p.ReadHeaderTimeout, p.ReadTimeout, p.IdleTimeout = 200*time.Millisecond, 200*time.Millisecond, 200*time.Millisecond
	}
	return &b
}

// TestPortFloods opens, on each HTTP port, many times its cap of idle
// kept-alive connections and of connections that never finish their
// headers. The agent holds at most the cap open at once, closes every one
// of them by its timeouts, and meanwhile answers a real probe and a real
// driver call on its socket.
func TestPortFloods(t *testing.T) {
	r, _ := startAudited(t, Options{Filesystem: &fakeFS{}, HealthProbeAddr: "127.0.0.1:0", MetricsBindAddress: "127.0.0.1:0", httpBounds: floodBounds()})
	if r.agent.probes == nil || r.agent.metrics == nil {
		t.Fatal("the probe or metrics endpoint is not served")
	}
	ports := map[string]struct {
		addr, path string
		listener   *countingListener
		max        int
	}{
		"probes":  {r.agent.HealthProbeAddress(), "/healthz", r.agent.probes.listener, probeMaxConnections},
		"metrics": {r.agent.MetricsAddress(), "/metrics", r.agent.metrics.limited, metricsMaxConnections},
	}
	fs := fsv1.NewFilesystemClient(r.dial(t, "filesystem", "v1"))
	for name, p := range ports {
		t.Run(name, func(t *testing.T) {
			n := 4 * p.max
			ended := make(chan error, 2*n)
			for i := range n {
				go func() { ended <- idleConn(p.addr, p.path) }()
				go func() { ended <- slowHeaderConn(p.addr, p.path, i) }()
			}
			waitOpen(t, p.listener, "at least", func(open int) bool { return open >= p.max }) // the flood holds every place

			// A real probe, and a driver call, while the flood goes on.
			code, body, err := getWithin(r.agent.HealthProbeAddress(), "/readyz")
			if err != nil || code != 200 || body != "ok" {
				t.Errorf("GET /readyz during the %s flood = %d %q (%v), want 200 ok", name, code, body, err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), floodDeadline)
			defer cancel()
			if _, err := fs.PathExists(ctx, &fsv1.PathExistsRequest{Path: r.kubelet}); err != nil {
				t.Errorf("PathExists during the %s flood: %v", name, err)
			}

			for range 2 * n {
				if err := <-ended; err != nil {
					t.Error(err)
				}
			}
			if _, peak := p.listener.counts(); peak > p.max {
				t.Errorf("%s held %d connections open at once, over its cap of %d", name, peak, p.max)
			}
			waitOpen(t, p.listener, "no", func(open int) bool { return open == 0 }) // every one closed
		})
	}
}

// waitOpen waits until the connections open on l satisfy ok, which want
// describes. The pause between looks only spares the CPU.
func waitOpen(t *testing.T, l *countingListener, want string, ok func(open int) bool) {
	t.Helper()
	deadline := time.Now().Add(floodDeadline)
	for {
		open, _ := l.counts()
		if ok(open) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d connections open after %s, want %s", open, floodDeadline, want)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// idleConn sends one request on a kept-alive connection, reads the
// answer, then sends nothing: nil once the agent has closed the
// connection.
func idleConn(addr, path string) error {
	c, err := net.Dial("tcp", addr)
	if err != nil {
		return fmt.Errorf("idle connection: %w", err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(floodDeadline))
	if _, err := fmt.Fprintf(c, "GET %s HTTP/1.1\r\nHost: agent\r\n\r\n", path); err != nil {
		return fmt.Errorf("idle connection: sending: %w", err)
	}
	br := bufio.NewReader(c)
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		return fmt.Errorf("idle connection: no answer to GET %s: %w", path, err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || resp.Close {
		return fmt.Errorf("idle connection: GET %s = %d (close %v), want 200 on a kept-alive connection", path, resp.StatusCode, resp.Close)
	}
	return closedByAgent(br, "idle connection")
}

// slowHeaderConn sends the start of a request and never ends its headers:
// nil once the agent has closed the connection.
func slowHeaderConn(addr, path string, i int) error {
	c, err := net.Dial("tcp", addr)
	if err != nil {
		return fmt.Errorf("slow connection: %w", err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(floodDeadline))
	if _, err := fmt.Fprintf(c, "GET %s HTTP/1.1\r\nHost: agent\r\nX-Slow: %d\r\n", path, i); err != nil {
		return fmt.Errorf("slow connection: sending: %w", err)
	}
	return closedByAgent(bufio.NewReader(c), "slow connection")
}

// closedByAgent reads until the agent ends the connection; an error when
// it sends a request's answer, or when the test's own deadline ends the
// wait instead.
func closedByAgent(br *bufio.Reader, what string) error {
	for {
		_, err := br.ReadByte()
		if err == nil {
			// A 408 or 400 before closing is the agent's to send.
			_ = br.UnreadByte()
			resp, err := http.ReadResponse(br, nil)
			if err != nil {
				return fmt.Errorf("%s: the agent sent something that is no answer: %w", what, err)
			}
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			continue
		}
		if errors.Is(err, os.ErrDeadlineExceeded) {
			return fmt.Errorf("%s: still open after %s", what, floodDeadline)
		}
		return nil // EOF or reset: closed by the agent
	}
}

// getWithin asks addr for path on a new connection, waiting up to
// floodDeadline for a place under the cap.
func getWithin(addr, path string) (int, string, error) {
	c := &http.Client{Timeout: floodDeadline, Transport: &http.Transport{DisableKeepAlives: true}}
	resp, err := c.Get("http://" + addr + path)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b), err
}
