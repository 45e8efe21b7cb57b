package app

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	fsv1 "github.com/kubernetes-csi/csi-proxy/client/api/filesystem/v1"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/pipeguard/pipeguard/agent/server"
)

// TestConcurrentClients runs many clients, each on its own connection, each
// creating, checking and removing its own directory tree.
func TestConcurrentClients(t *testing.T) {
	r := start(t, Options{})
	const clients, rounds = 16, 20
	var wg sync.WaitGroup
	errs := make(chan error, clients)
	for i := range clients {
		c := fsv1.NewFilesystemClient(r.dial(t, "filesystem", "v1"))
		wg.Go(func() {
			ctx := context.Background()
			for j := range rounds {
				dir := filepath.Join(r.kubelet, "pods", fmt.Sprintf("c%d", i), fmt.Sprintf("r%d", j))
				if _, err := c.Mkdir(ctx, &fsv1.MkdirRequest{Path: dir}); err != nil {
					errs <- fmt.Errorf("client %d Mkdir: %w", i, err)
					return
				}
				if resp, err := c.PathExists(ctx, &fsv1.PathExistsRequest{Path: dir}); err != nil || !resp.Exists {
					errs <- fmt.Errorf("client %d PathExists = %v, %v", i, resp, err)
					return
				}
				if _, err := c.Rmdir(ctx, &fsv1.RmdirRequest{Path: dir}); err != nil {
					errs <- fmt.Errorf("client %d Rmdir: %w", i, err)
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

// TestGracefulShutdown holds a call in flight in the host, shuts the agent
// down, and checks that the call completes, that new calls are refused, and
// that the sockets are gone once Serve returns.
func TestGracefulShutdown(t *testing.T) {
	host := &fakeFS{block: true, entered: make(chan struct{}), release: make(chan struct{})}
	r := start(t, Options{Filesystem: host})
	conn := r.dial(t, "filesystem", "v1")
	c := fsv1.NewFilesystemClient(conn)

	type result struct {
		resp *fsv1.PathExistsResponse
		err  error
	}
	inflight := make(chan result, 1)
	go func() {
		resp, err := c.PathExists(context.Background(), &fsv1.PathExistsRequest{Path: r.kubelet})
		inflight <- result{resp, err}
	}()
	<-host.entered // the call is now inside the host operation

	r.cancel() // SIGTERM
	r.cancel = nil

	// New connections are refused once the listeners close; GracefulStop
	// closes them before waiting for in-flight calls. A fresh connection
	// cannot reach the socket.
	sock := server.SocketPath(r.socketDir, "filesystem", "v1")
	waitGone(t, sock)
	late := fsv1.NewFilesystemClient(r.dial(t, "filesystem", "v1"))
	_, err := late.PathExists(context.Background(), &fsv1.PathExistsRequest{Path: r.kubelet})
	if status.Code(err) != codes.Unavailable {
		t.Fatalf("call after shutdown began: %v, want Unavailable", err)
	}

	close(host.release)
	got := <-inflight
	if got.err != nil || !got.resp.Exists {
		t.Fatalf("in-flight call = %v, %v; want it to complete", got.resp, got.err)
	}
	if err := <-r.done; err != nil {
		t.Fatalf("Serve: %v", err)
	}
	entries, _ := os.ReadDir(r.socketDir)
	if len(entries) != 0 {
		t.Fatalf("sockets left after shutdown: %v", entries)
	}
}

// waitGone waits until the socket file is removed; the listener closes
// asynchronously once shutdown starts. It polls for the event; the pause
// only spares the CPU and no result depends on it.
func waitGone(t *testing.T, path string) {
	t.Helper()
	for {
		if _, err := os.Stat(path); errors.Is(err, os.ErrNotExist) {
			return
		}
		if t.Context().Err() != nil {
			t.Fatal("socket never went away")
		}
		// Poll under the test's deadline for the removal; the pause only spares the CPU.
		time.Sleep(time.Millisecond)
	}
}

func TestMetricsCountRequestsByCode(t *testing.T) {
	reg := prometheus.NewRegistry()
	r := start(t, Options{Registry: reg})
	c := fsv1.NewFilesystemClient(r.dial(t, "filesystem", "v1"))
	ctx := context.Background()
	for range 3 {
		if _, err := c.PathExists(ctx, &fsv1.PathExistsRequest{Path: r.kubelet}); err != nil {
			t.Fatal(err)
		}
	}
	_, _ = c.PathExists(ctx, &fsv1.PathExistsRequest{Path: "/etc"})

	got := counters(t, reg, "pipeguard_agent_requests_total")
	want := map[string]float64{
		"code=OK,group=filesystem,method=PathExists,version=v1":               3,
		"code=PermissionDenied,group=filesystem,method=PathExists,version=v1": 1,
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("requests_total = %v, want %v", got, want)
	}
	if n := histogramCount(t, reg, "pipeguard_agent_request_duration_seconds"); n != 4 {
		t.Fatalf("latency observations = %d, want 4", n)
	}
}

// counters returns the values of a counter family keyed by their labels.
func counters(t *testing.T, g prometheus.Gatherer, name string) map[string]float64 {
	t.Helper()
	out := map[string]float64{}
	for _, m := range family(t, g, name) {
		var labels []string
		for _, l := range m.GetLabel() {
			labels = append(labels, l.GetName()+"="+l.GetValue())
		}
		out[strings.Join(labels, ",")] = m.GetCounter().GetValue()
	}
	return out
}

func histogramCount(t *testing.T, g prometheus.Gatherer, name string) uint64 {
	t.Helper()
	var n uint64
	for _, m := range family(t, g, name) {
		n += m.GetHistogram().GetSampleCount()
	}
	return n
}

func family(t *testing.T, g prometheus.Gatherer, name string) []*dto.Metric {
	t.Helper()
	mfs, err := g.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() == name {
			return mf.GetMetric()
		}
	}
	t.Fatalf("no metric family %s", name)
	return nil
}
