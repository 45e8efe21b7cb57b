package app

import (
	"context"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	diskv1 "github.com/kubernetes-csi/csi-proxy/client/api/disk/v1"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"

	"github.com/pipeguard/pipeguard/agent/audit"
	"github.com/pipeguard/pipeguard/agent/guard"
	"github.com/pipeguard/pipeguard/agent/hostops/runner"
	hostvol "github.com/pipeguard/pipeguard/agent/hostops/volume"
)

// hangOn is a runner whose commands with the environment entry hang run until
// their context ends; the others answer at once.
type hangOn struct {
	hang string
	ran  atomic.Int32
}

func (h *hangOn) Run(ctx context.Context, cmd runner.Command) ([]byte, error) {
	h.ran.Add(1)
	for _, e := range cmd.Env {
		if e == h.hang {
			<-ctx.Done()
			return nil, ctx.Err()
		}
	}
	return nil, nil
}

// TestHostCallDeadlineThroughTheGuard partitions a disk whose PowerShell
// never ends: the call answers DeadlineExceeded naming the operation and
// the flag within its deadline, its completion record carries that error,
// and the next call runs.
func TestHostCallDeadlineThroughTheGuard(t *testing.T) {
	fake := &hangOn{hang: "disknumber=7"}
	const timeout = 300 * time.Millisecond
	g := startGuarded(t, Options{GOOS: "windows", KubeletPath: `C:\var\lib\kubelet`, Filesystem: &fakeFS{}, Runner: fake,
		HostCallTimeouts: map[string]time.Duration{"disk": timeout}}, guard.Options{}, nil)
	disk := diskv1.NewDiskClient(g.dial(t, "disk", "v1"))
	const msg = "disk partitioning disk did not finish within 300ms (host operation deadline; --host-call-timeout-disk)"

	var md metadata.MD
	start := time.Now()
	_, err := disk.PartitionDisk(context.Background(), &diskv1.PartitionDiskRequest{DiskNumber: 7}, grpc.Header(&md), askAuditID)
	if took := time.Since(start); took > timeout+10*time.Second {
		t.Fatalf("answered after %v", took)
	}
	wantStatus(t, err, codes.DeadlineExceeded, msg)
	if _, err := disk.PartitionDisk(context.Background(), &diskv1.PartitionDiskRequest{DiskNumber: 1}); err != nil {
		t.Fatalf("next call: %v", err)
	}
	if n := fake.ran.Load(); n != 2 {
		t.Fatalf("%d commands ran, want 2", n)
	}

	ids := md.Get(guard.AuditIDHeader)
	if len(ids) != 1 {
		t.Fatalf("audit-id header %v", ids)
	}
	recs := g.requests(t)[ids[0]]
	if len(recs) == 0 {
		t.Fatalf("no record of %s", ids[0])
	}
	e := recs[len(recs)-1].Event
	if e.Stage != audit.StageResponseComplete || e.ResponseStatus == nil || e.ResponseStatus.Reason != "DeadlineExceeded" ||
		e.ResponseStatus.Code != 504 || !strings.Contains(e.ResponseStatus.Message, msg) || e.Annotation(audit.AnnotationGRPCCode) != "DeadlineExceeded" {
		t.Fatalf("completion record: stage %s, status %+v, annotations %v", e.Stage, e.ResponseStatus, e.Annotations)
	}
}

// formatGate counts the host calls running at once and holds each until
// released.
type formatGate struct {
	running, max atomic.Int32
	started      chan struct{}
	release      chan struct{}
}

func (g *formatGate) Run(_ context.Context, _ runner.Command) ([]byte, error) {
	n := g.running.Add(1)
	defer g.running.Add(-1)
	for m := g.max.Load(); n > m && !g.max.CompareAndSwap(m, n); m = g.max.Load() {
	}
	g.started <- struct{}{}
	<-g.release
	return nil, nil
}

// TestFormatConcurrency formats and resizes 32 volumes at once through the
// volume group's runner: never more than --format-concurrency run at once,
// and all finish.
func TestFormatConcurrency(t *testing.T) {
	g := &formatGate{started: make(chan struct{}, 32), release: make(chan struct{})}
	host := hostvol.PowerShell{Runner: boundRunner(Options{}, g, "volume")}
	var wg sync.WaitGroup
	errs := make(chan error, 32)
	for i := range 32 {
		wg.Go(func() {
			if i%2 == 0 {
				errs <- host.FormatVolume(context.Background(), `\\?\Volume{452e318a-5cde-421e-9831-b9853c521012}\`)
			} else {
				errs <- host.ResizeVolume(context.Background(), `\\?\Volume{452e318a-5cde-421e-9831-b9853c521012}\`, 1<<30)
			}
		})
	}
	<-g.started
	<-g.started
	close(g.release)
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	if m := g.max.Load(); m != DefaultFormatConcurrency {
		t.Fatalf("%d ran at once, want %d", m, DefaultFormatConcurrency)
	}
}
