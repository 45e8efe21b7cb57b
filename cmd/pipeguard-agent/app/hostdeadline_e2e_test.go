package app

import (
	"context"
	"fmt"
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
	hostvol "github.com/pipeguard/pipeguard/agent/hostops/volume"
	"github.com/pipeguard/pipeguard/agent/hostops/wmi"
	"github.com/pipeguard/pipeguard/internal/testing/wmitest"
)

// hangOn is a WMI connection whose method calls that hang reports run
// until their context ends, without reaching the provider; the others
// reach it. It records every method call, as its method and path.
type hangOn struct {
	wmi.Conn
	hang func(path, method string, in []wmi.Param) bool

	mu    sync.Mutex
	calls []string
}

func (h *hangOn) Call(ctx context.Context, ns, path, method string, in ...wmi.Param) (wmi.Object, error) {
	h.mu.Lock()
	h.calls = append(h.calls, method+" "+path)
	h.mu.Unlock()
	if h.hang(path, method, in) {
		<-ctx.Done()
		return wmi.Object{}, ctx.Err()
	}
	return h.Conn.Call(ctx, ns, path, method, in...)
}

// called returns the method calls made, those of method only.
func (h *hangOn) called(method string) []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []string
	for _, c := range h.calls {
		if strings.HasPrefix(c, method+" ") {
			out = append(out, c)
		}
	}
	return out
}

// objectPath is the path of a storage instance, as a query answers it.
func objectPath(w *hostWMI, class string, in *wmitest.Instance) string {
	return wmitest.RelPath(class, "ObjectId", w.storage.Prop(in, "ObjectId").(string))
}

// TestHostCallDeadlineThroughTheGuard partitions a disk whose
// MSFT_Disk.Initialize never answers: the call answers DeadlineExceeded
// naming the operation and the flag within its deadline, its completion
// record carries that error, and the next call runs.
func TestHostCallDeadlineThroughTheGuard(t *testing.T) {
	w := newHostWMI()
	hung := objectPath(w, "MSFT_Disk", w.storage.AddDisk(7, 8<<30, 0))
	next := objectPath(w, "MSFT_Disk", w.storage.AddDisk(1, 8<<30, 0))
	fake := &hangOn{Conn: w, hang: func(path, _ string, _ []wmi.Param) bool { return path == hung }}
	const timeout = 300 * time.Millisecond
	g := startGuarded(t, Options{GOOS: "windows", KubeletPath: `C:\var\lib\kubelet`, Filesystem: &fakeFS{}, WMI: fake,
		HostCallTimeouts: map[string]time.Duration{"disk": timeout}}, guard.Options{}, nil)
	disk := diskv1.NewDiskClient(g.dial(t, "disk", "v1"))
	const msg = "disk MSFT_Disk.CreatePartition did not finish within 300ms (host operation deadline; --host-call-timeout-disk)"

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
	if got, want := fake.called("Initialize"), []string{"Initialize " + hung, "Initialize " + next}; fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("initialized %q, want %q", got, want)
	}
	if got := w.methods(); fmt.Sprint(got) != "[MSFT_Disk.Initialize MSFT_Disk.CreatePartition MSFT_Disk.Refresh MSFT_Partition.Online]" {
		t.Fatalf("the next call called %q, want disk 1 initialized and partitioned", got)
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

// formatGate is a WMI connection that counts the Format and Resize calls
// running at once and holds each until released.
type formatGate struct {
	wmi.Conn
	running, max atomic.Int32
	started      chan struct{}
	release      chan struct{}
}

func (g *formatGate) Call(ctx context.Context, ns, path, method string, in ...wmi.Param) (wmi.Object, error) {
	if method != "Format" && method != "Resize" {
		return g.Conn.Call(ctx, ns, path, method, in...)
	}
	n := g.running.Add(1)
	defer g.running.Add(-1)
	for m := g.max.Load(); n > m && !g.max.CompareAndSwap(m, n); m = g.max.Load() {
	}
	g.started <- struct{}{}
	<-g.release
	return g.Conn.Call(ctx, ns, path, method, in...)
}

// newFormatGate is a gate over a provider where testVolume is a 512 MiB
// NTFS volume on a disk with room for it to grow.
func newFormatGate(started int) *formatGate {
	w := newHostWMI()
	d := w.storage.AddDisk(3, 4<<30, 2)
	w.storage.AddVolume(w.storage.AddPartition(d, 512<<20, wmitest.GPTBasicData), volumeID, "NTFS")
	return &formatGate{Conn: w, started: make(chan struct{}, started), release: make(chan struct{})}
}

// TestFormatConcurrency formats and resizes 32 volumes at once through the
// volume group's limits: never more than --format-concurrency run at once,
// and all finish.
func TestFormatConcurrency(t *testing.T) {
	g := newFormatGate(32)
	host := hostvol.WMI{Conn: g, Limits: bound(Options{}, "volume")}
	var wg sync.WaitGroup
	errs := make(chan error, 32)
	for i := range 32 {
		wg.Go(func() {
			if i%2 == 0 {
				errs <- host.FormatVolume(context.Background(), volumeID)
			} else {
				errs <- host.ResizeVolume(context.Background(), volumeID, 1<<30)
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
