package app

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	fsv1 "github.com/kubernetes-csi/csi-proxy/client/api/filesystem/v1"

	"github.com/pipeguard/pipeguard/agent/audit"
)

// fakeAudit is an audit log whose state the test sets; while hold is set,
// Writable waits for it to be closed, as for a write that is stuck.
type fakeAudit struct {
	path string
	err  error
	hold chan struct{}
}

func (f *fakeAudit) Path() string { return f.path }

func (f *fakeAudit) Writable() error {
	if f.hold != nil {
		<-f.hold
	}
	return f.err
}

// probe asks the handler of h for path and returns the code and body.
func probe(t *testing.T, h *health, path string) (int, string) {
	t.Helper()
	rec := httptest.NewRecorder()
	h.handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
	return rec.Code, rec.Body.String()
}

func listeningHealth(a auditState) *health {
	h := newHealth(a, logr.Discard())
	h.listening.Store(true)
	return h
}

func TestProbes(t *testing.T) {
	cases := map[string]struct {
		h    *health
		path string
		code int
		body string
	}{
		"ready":                      {listeningHealth(&fakeAudit{path: "/x/audit.log"}), "/readyz", 200, "ok"},
		"ready without an audit log": {listeningHealth(nil), "/readyz", 200, "ok"},
		"not listening yet":          {newHealth(&fakeAudit{path: "/x/audit.log"}, logr.Discard()), "/readyz", 503, "not ready: pipes not serving"},
		"audit log broken": {listeningHealth(&fakeAudit{path: "/x/audit.log", err: errors.New("disk full")}), "/readyz", 503,
			"not ready: audit log not writable"},
		"live":                         {listeningHealth(&fakeAudit{path: "/x/audit.log"}), "/healthz", 200, "ok"},
		"live with a broken audit log": {listeningHealth(&fakeAudit{path: "/x/audit.log", err: errors.New("disk full")}), "/healthz", 200, "ok"},
		"live before listening":        {newHealth(nil, logr.Discard()), "/healthz", 200, "ok"},
		"no other path":                {listeningHealth(nil), "/metrics", 404, "404 page not found\n"},
		"no path below the probes":     {listeningHealth(nil), "/readyz/audit", 404, "404 page not found\n"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			code, body := probe(t, tc.h, tc.path)
			if code != tc.code || body != tc.body {
				t.Fatalf("GET %s = %d %q, want %d %q", tc.path, code, body, tc.code, tc.body)
			}
		})
	}
}

func TestProbesOnlyGet(t *testing.T) {
	rec := httptest.NewRecorder()
	listeningHealth(nil).handler().ServeHTTP(rec, httptest.NewRequest(http.MethodPost, "/readyz", nil))
	if rec.Code != http.StatusMethodNotAllowed {
		t.Fatalf("POST /readyz = %d, want 405", rec.Code)
	}
}

func TestReadyzShuttingDown(t *testing.T) {
	h := listeningHealth(&fakeAudit{path: "/x/audit.log"})
	h.stopping.Store(true)
	if code, body := probe(t, h, "/readyz"); code != 503 || body != "shutting down" {
		t.Fatalf("GET /readyz = %d %q, want 503 \"shutting down\"", code, body)
	}
	if code, body := probe(t, h, "/healthz"); code != 200 || body != "ok" {
		t.Fatalf("GET /healthz while shutting down = %d %q, want 200 ok", code, body)
	}
}

// blockingFile is an audit file whose writes wait, once armed, until it is
// released: a write stuck in the kernel, holding the log's lock.
type blockingFile struct {
	audit.File
	armed   chan struct{} // closed: writes block
	entered chan struct{} // closed when a write blocks
	release chan struct{}
	once    sync.Once
}

func (f *blockingFile) Write(p []byte) (int, error) {
	select {
	case <-f.armed:
		f.once.Do(func() { close(f.entered) })
		<-f.release
	default:
	}
	return f.File.Write(p)
}

// TestProbesWithStuckAuditWrite holds the real audit log's lock with a
// write that does not end, and checks that both probes answer 503 within
// the check's timeout rather than waiting for the lock, and answer 200
// again once the write ends.
func TestProbesWithStuckAuditWrite(t *testing.T) {
	path := filepath.Join(t.TempDir(), "audit.log")
	bf := &blockingFile{armed: make(chan struct{}), entered: make(chan struct{}), release: make(chan struct{})}
	log, err := audit.Open(audit.Options{Path: path, Log: logr.Discard(), OpenFile: func(p string) (audit.File, error) {
		f, err := os.OpenFile(p, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
		if err != nil {
			return nil, err
		}
		bf.File = f
		return bf, nil
	}})
	if err != nil {
		t.Fatal(err)
	}
	h := listeningHealth(log)
	if code, body := probe(t, h, "/readyz"); code != 200 {
		t.Fatalf("GET /readyz before the stuck write = %d %q", code, body)
	}

	close(bf.armed)
	appended := make(chan error, 1)
	go func() { appended <- log.Append(&audit.Event{}, false) }()
	<-bf.entered // the write now holds the log's lock
	var released bool
	t.Cleanup(func() {
		if !released {
			close(bf.release)
			<-appended
		}
		_ = log.Close()
	})

	for _, p := range []struct{ path, body string }{
		{"/healthz", "audit log stuck"},
		{"/readyz", "not ready: audit log stuck"},
		{"/healthz", "audit log stuck"}, // joins the check still waiting
	} {
		start := time.Now()
		code, body := probe(t, h, p.path)
		took := time.Since(start)
		if code != 503 || body != p.body {
			t.Fatalf("GET %s with the audit lock held = %d %q, want 503 %q", p.path, code, body, p.body)
		}
		if took > 2500*time.Millisecond {
			t.Fatalf("GET %s took %s with the audit lock held, want about 1s", p.path, took)
		}
	}

	close(bf.release)
	released = true
	if err := <-appended; err != nil {
		t.Fatalf("Append: %v", err)
	}
	if code, body := probe(t, h, "/healthz"); code != 200 || body != "ok" {
		t.Fatalf("GET /healthz once the write ended = %d %q, want 200 ok", code, body)
	}
	if code, body := probe(t, h, "/readyz"); code != 200 || body != "ok" {
		t.Fatalf("GET /readyz once the write ended = %d %q, want 200 ok", code, body)
	}
}

// TestReadyzOnAClosedAuditLog checks the reason given when the real audit
// log refuses records.
func TestReadyzOnAClosedAuditLog(t *testing.T) {
	path := filepath.Join(t.TempDir(), "audit.log")
	log, err := audit.Open(audit.Options{Path: path, Log: logr.Discard()})
	if err != nil {
		t.Fatal(err)
	}
	if err := log.Close(); err != nil {
		t.Fatal(err)
	}
	want := "not ready: audit log not writable"
	if code, body := probe(t, listeningHealth(log), "/readyz"); code != 503 || body != want {
		t.Fatalf("GET /readyz = %d %q, want 503 %q", code, body, want)
	}
}

// get asks the agent's probe endpoint for path; err is set when it did
// not answer.
func get(t *testing.T, addr, path string) (int, string, error) {
	t.Helper()
	c := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	resp, err := c.Get("http://" + addr + path)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b), err
}

// waitProbe polls path until it answers code and body, or fails after a
// generous deadline. The pause between polls only spares the CPU.
func waitProbe(t *testing.T, addr, path string, code int, body string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		c, b, err := get(t, addr, path)
		if err == nil && c == code && b == body {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("GET %s = %d %q (%v), want %d %q", path, c, b, err, code, body)
		}
		// Poll under the deadline above; the pause only spares the CPU.
		time.Sleep(10 * time.Millisecond)
	}
}

// TestAgentProbes runs the agent with its audit log and probes: /readyz is
// 200 once the sockets listen, and 503 "shutting down" from the start of
// shutdown while a call is still in flight; the endpoint closes once the
// agent has shut down.
func TestAgentProbes(t *testing.T) {
	host := &fakeFS{block: true, entered: make(chan struct{}), release: make(chan struct{})}
	r, _ := startAudited(t, Options{Filesystem: host, HealthProbeAddr: "127.0.0.1:0"})
	addr := r.agent.HealthProbeAddress()
	if addr == "" {
		t.Fatal("no health probe endpoint")
	}
	waitProbe(t, addr, "/readyz", 200, "ok")
	waitProbe(t, addr, "/healthz", 200, "ok")

	c := fsv1.NewFilesystemClient(r.dial(t, "filesystem", "v1"))
	inflight := make(chan error, 1)
	go func() {
		_, err := c.PathExists(context.Background(), &fsv1.PathExistsRequest{Path: r.kubelet})
		inflight <- err
	}()
	<-host.entered // the call holds the shutdown open

	r.cancel()
	r.cancel = nil
	waitProbe(t, addr, "/readyz", 503, "shutting down")
	waitProbe(t, addr, "/healthz", 200, "ok")

	close(host.release)
	if err := <-inflight; err != nil {
		t.Fatalf("in-flight call: %v", err)
	}
	if err := <-r.done; err != nil {
		t.Fatalf("Serve: %v", err)
	}
	if _, _, err := get(t, addr, "/readyz"); err == nil || !strings.Contains(err.Error(), "refused") {
		t.Fatalf("GET /readyz after shutdown: %v, want the connection refused", err)
	}
}

func TestAgentWithoutProbes(t *testing.T) {
	r := start(t, Options{})
	if addr := r.agent.HealthProbeAddress(); addr != "" {
		t.Fatalf("probes served at %s without HealthProbeAddr", addr)
	}
}
