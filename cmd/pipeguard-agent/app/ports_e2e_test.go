package app

import (
	"bufio"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	fsv1 "github.com/kubernetes-csi/csi-proxy/client/api/filesystem/v1"
	"k8s.io/client-go/rest"
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
	// Secure metrics, as the DaemonSet serves them: the API server is
	// never asked, since no scrape carries a token.
	secure := start(t, Options{HealthProbeAddr: "127.0.0.1:0", MetricsBindAddress: "127.0.0.1:0", MetricsSecure: true, MetricsAuth: &rest.Config{Host: "https://127.0.0.1:1"}, httpBounds: floodBounds()})
	if r.agent.probes == nil || r.agent.metrics == nil || secure.agent.metrics == nil {
		t.Fatal("the probe or metrics endpoint is not served")
	}
	plain := func(addr string) func() (net.Conn, error) {
		return func() (net.Conn, error) { return net.Dial("tcp", addr) }
	}
	ports := map[string]struct {
		agent    *running
		path     string
		dial     func() (net.Conn, error) // the connection a request is sent on
		answer   int                      // the status of that request
		addr     string
		slow     func(i int) string // what slow connection i sends, and nothing more
		listener *countingListener
		max      int
	}{
		"probes": {r, "/healthz", plain(r.agent.HealthProbeAddress()), http.StatusOK,
			r.agent.HealthProbeAddress(), slowHeader, r.agent.probes.listener, probeMaxConnections},
		"metrics": {r, "/metrics", plain(r.agent.MetricsAddress()), http.StatusOK,
			r.agent.MetricsAddress(), slowHeader, r.agent.metrics.limited, metricsMaxConnections},
		"secure metrics": {secure, "/metrics", func() (net.Conn, error) {
			return tls.Dial("tcp", secure.agent.MetricsAddress(), &tls.Config{InsecureSkipVerify: true}) //nolint:gosec // the agent's self-signed certificate
		}, http.StatusUnauthorized, secure.agent.MetricsAddress(), slowHandshake, secure.agent.metrics.limited, metricsMaxConnections},
	}
	for name, p := range ports {
		t.Run(name, func(t *testing.T) {
			n := 4 * p.max
			ended := make(chan error, 2*n)
			for i := range n {
				go func() { ended <- idleConn(p.dial, p.path, p.answer) }()
				go func() { ended <- slowConn(p.addr, p.slow(i)) }()
			}
			waitOpen(t, p.listener, "at least", func(open int) bool { return open >= p.max }) // the flood holds every place

			// A real probe, and a driver call, while the flood goes on.
			code, body, err := getWithin(p.agent.agent.HealthProbeAddress(), "/readyz")
			if err != nil || code != 200 || body != "ok" {
				t.Errorf("GET /readyz during the %s flood = %d %q (%v), want 200 ok", name, code, body, err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), floodDeadline)
			defer cancel()
			fs := fsv1.NewFilesystemClient(p.agent.dial(t, "filesystem", "v1"))
			if _, err := fs.PathExists(ctx, &fsv1.PathExistsRequest{Path: p.agent.kubelet}); err != nil {
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
		// Poll under the deadline above; the pause only spares the CPU.
		time.Sleep(5 * time.Millisecond)
	}
}

// slowHeader is a request whose headers never end.
func slowHeader(i int) string {
	return fmt.Sprintf("GET / HTTP/1.1\r\nHost: agent\r\nX-Slow: %d\r\n", i)
}

// slowHandshake is the header of a TLS handshake record of 255 bytes that
// never come.
func slowHandshake(int) string { return "\x16\x03\x01\x00\xff" }

// idleConn sends one request on a kept-alive connection, reads the
// answer, then sends nothing: nil once the agent has closed the
// connection.
func idleConn(dial func() (net.Conn, error), path string, answer int) error {
	c, err := dial()
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
	if resp.StatusCode != answer || resp.Close {
		return fmt.Errorf("idle connection: GET %s = %d (close %v), want %d on a kept-alive connection", path, resp.StatusCode, resp.Close, answer)
	}
	return closedByAgent(br, "idle connection")
}

// slowConn sends the start of a request or handshake and never its end:
// nil once the agent has closed the connection.
func slowConn(addr, start string) error {
	c, err := net.Dial("tcp", addr)
	if err != nil {
		return fmt.Errorf("slow connection: %w", err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(floodDeadline))
	if _, err := io.WriteString(c, start); err != nil {
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

// TestPortHeaderBytes checks that both ports refuse request headers over
// their bound with 431, and take them within it.
func TestPortHeaderBytes(t *testing.T) {
	r := start(t, Options{HealthProbeAddr: "127.0.0.1:0", MetricsBindAddress: "127.0.0.1:0"})
	for name, url := range map[string]string{
		"probes":  "http://" + r.agent.HealthProbeAddress() + "/healthz",
		"metrics": "http://" + r.agent.MetricsAddress() + "/metrics",
	} {
		for size, want := range map[int]int{1 << 10: http.StatusOK, 2 * portMaxHeaderBytes: http.StatusRequestHeaderFieldsTooLarge} {
			req, err := http.NewRequest(http.MethodGet, url, nil)
			if err != nil {
				t.Fatal(err)
			}
			req.Header.Set("X-Padding", strings.Repeat("a", size))
			c := &http.Client{Timeout: floodDeadline, Transport: &http.Transport{DisableKeepAlives: true}}
			resp, err := c.Do(req)
			if err != nil {
				t.Fatalf("%s, %d bytes of headers: %v", name, size, err)
			}
			resp.Body.Close()
			if resp.StatusCode != want {
				t.Errorf("%s, %d bytes of headers: %d, want %d", name, size, resp.StatusCode, want)
			}
		}
	}
}

// BenchmarkProbeWhileMetricsFlooded measures a probe (/readyz, a new
// connection each) while the metrics port's cap is held by idle
// connections: the ports' caps are their own.
func BenchmarkProbeWhileMetricsFlooded(b *testing.B) {
	r := start(b, Options{HealthProbeAddr: "127.0.0.1:0", MetricsBindAddress: "127.0.0.1:0"})
	for range 4 * metricsMaxConnections {
		c, err := net.Dial("tcp", r.agent.MetricsAddress())
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { _ = c.Close() })
	}
	addr := r.agent.HealthProbeAddress()
	b.ResetTimer()
	for range b.N {
		if code, _, err := getWithin(addr, "/readyz"); err != nil || code != 200 {
			b.Fatalf("GET /readyz = %d (%v)", code, err)
		}
	}
}
