package volume

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"google.golang.org/grpc/status"

	"github.com/pipeguard/pipeguard/agent/apierr"
	"github.com/pipeguard/pipeguard/agent/confine"
	"github.com/pipeguard/pipeguard/agent/groups/inflight"
	"github.com/pipeguard/pipeguard/agent/hostops/limits"
	hostvol "github.com/pipeguard/pipeguard/agent/hostops/volume"
)

const otherVolume = `\\?\Volume{0c9b2f1e-1111-4d2a-9d7e-3f1b2c3d4e5f}\`

// provider is a volume host whose format of testVolume stays in the
// storage provider: the call answers its deadline when the test says, and
// the volume reads as formatted only once the test says the provider is
// done. Other volumes format at once.
type provider struct {
	hostvol.API               // nil: the calls the tests do not make
	started     chan string   // a FormatVolume or ResizeVolume started, by volume
	deadline    chan struct{} // answer testVolume's call with its deadline
	mu          sync.Mutex
	formatted   bool
	formats     int
	checks      int
}

func newProvider() *provider {
	return &provider{started: make(chan string, 10), deadline: make(chan struct{})}
}

var formatDeadline = &limits.DeadlineError{Group: "volume", Op: "Format-Volume", Timeout: 90 * time.Second, Setting: "--host-call-timeout-volume"}

func (p *provider) FormatVolume(ctx context.Context, id string) error {
	p.mu.Lock()
	p.formats++
	p.mu.Unlock()
	p.started <- id
	if id != testVolume {
		return nil
	}
	<-p.deadline
	return formatDeadline
}

func (p *provider) ResizeVolume(ctx context.Context, id string, size int64) error {
	p.started <- id
	return nil
}

func (p *provider) IsVolumeFormatted(ctx context.Context, id string) (bool, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.checks++
	return p.formatted, nil
}

func (p *provider) GetVolumeStats(ctx context.Context, id string) (int64, int64, error) {
	return 1 << 30, 0, nil
}

func (p *provider) GetClosestVolumeIDFromTargetPath(ctx context.Context, path string) (string, error) {
	return `\\?\Volume{00000000-0000-0000-0000-00000000c0de}\`, nil
}

func (p *provider) MountVolume(ctx context.Context, id, path string) error { return nil }

func (p *provider) set(formatted bool) { p.mu.Lock(); p.formatted = formatted; p.mu.Unlock() }

func (p *provider) counts() (formats, checks int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.formats, p.checks
}

func heldServer(t *testing.T, p *provider) (*Server, *inflight.Metrics) {
	t.Helper()
	conf, err := confine.New(confine.Options{Flavour: confine.Windows, Roots: []string{`C:\var\lib\kubelet`}})
	if err != nil {
		t.Fatal(err)
	}
	s, err := New(p, conf)
	if err != nil {
		t.Fatal(err)
	}
	m, err := inflight.NewMetrics(prometheus.NewRegistry())
	if err != nil {
		t.Fatal(err)
	}
	return s.TrackOperations(m, logr.Discard()), m
}

func wantAborted(t *testing.T, what string, err error, want string) {
	t.Helper()
	if err == nil {
		t.Fatalf("%s ran; want it refused with %q", what, want)
	}
	if apierr.Code(err).String() != "Aborted" || status.Code(apierr.Status(err)).String() != "Aborted" {
		t.Fatalf("%s answers %v (%v), want Aborted", what, apierr.Code(err), err)
	}
	if got := err.Error(); !strings.HasPrefix(got, want) || !strings.HasSuffix(got, "is still running (its deadline passed; the storage provider may still be working), retry later") && !strings.HasSuffix(got, "is still running, retry later") {
		t.Fatalf("%s:\n got %q\nwant %q...", what, got, want)
	}
}

// A format past its deadline leaves the provider formatting: the next
// FormatVolume of that volume is refused while IsVolumeFormatted says no,
// and so are a resize and a mount; reads and other volumes go on; once the
// volume reads formatted, the next call runs.
func TestFormatPastItsDeadlineHoldsTheVolume(t *testing.T) {
	p := newProvider()
	s, m := heldServer(t, p)
	ctx := context.Background()
	first := make(chan error, 1)
	go func() { first <- s.FormatVolume(ctx, testVolume) }()
	<-p.started

	// While the first call runs.
	err := s.FormatVolume(ctx, upperGUID)
	wantAborted(t, "a second FormatVolume", err, `volume FormatVolume of `+upperGUID+` is refused: FormatVolume of this volume started `)
	if !strings.HasSuffix(err.Error(), " is still running, retry later") {
		t.Fatalf("refusal while running: %q", err)
	}
	if err := s.FormatVolume(ctx, otherVolume); err != nil {
		t.Fatalf("FormatVolume of another volume: %v", err)
	}
	<-p.started

	close(p.deadline)
	if err := <-first; err != formatDeadline {
		t.Fatalf("first FormatVolume = %v, want its deadline", err)
	}
	// Deadline passed, provider still working.
	err = s.FormatVolume(ctx, testVolume)
	wantAborted(t, "FormatVolume after the deadline", err, `volume FormatVolume of `+testVolume+` is refused: FormatVolume of this volume started `)
	if !strings.HasSuffix(err.Error(), "(its deadline passed; the storage provider may still be working), retry later") {
		t.Fatalf("refusal after the deadline: %q", err)
	}
	wantAborted(t, "ResizeVolume", s.ResizeVolume(ctx, testVolume, "size_bytes", 0), `volume ResizeVolume of `+testVolume+` is refused: FormatVolume of this volume started `)
	wantAborted(t, "MountVolume", s.MountVolume(ctx, testVolume, "target_path", stagingPath), `volume MountVolume of `+testVolume+` is refused: FormatVolume of this volume started `)
	wantAborted(t, "UnmountVolume", s.UnmountVolume(ctx, testVolume, "target_path", stagingPath), `volume UnmountVolume of `+testVolume+` is refused: FormatVolume of this volume started `)
	if _, _, err := s.GetVolumeStats(ctx, testVolume); err != nil {
		t.Fatalf("GetVolumeStats, a read, was refused: %v", err)
	}
	if formats, checks := p.counts(); formats != 2 || checks != 4 {
		t.Fatalf("%d formats and %d settle checks ran, want 2 and 4 (one per refused call after the deadline, none for the read)", formats, checks)
	}
	if n := testutil.ToFloat64(mRefused(m, "FormatVolume")); n != 2 {
		t.Fatalf("refused FormatVolume counted %v times, want 2", n)
	}

	// The provider is done.
	p.set(true)
	if err := s.ResizeVolume(ctx, testVolume, "size_bytes", 0); err != nil {
		t.Fatalf("ResizeVolume once the volume reads formatted: %v", err)
	}
	<-p.started
	if err := s.MountVolume(ctx, testVolume, "target_path", stagingPath); err != nil {
		t.Fatalf("MountVolume after the resize: %v", err)
	}
}

func mRefused(m *inflight.Metrics, op string) prometheus.Counter { return m.Refused(Group, op) }

// upperGUID is testVolume with its GUID in capitals: the same volume.
var upperGUID = `\\?\Volume{452E318A-5CDE-421E-9831-B9853C521012}\`
