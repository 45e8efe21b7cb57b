package app

import (
	"context"
	"strings"
	"testing"
	"time"

	volv1 "github.com/kubernetes-csi/csi-proxy/client/api/volume/v1"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"google.golang.org/grpc/codes"

	"github.com/pipeguard/pipeguard/agent/hostops/wmi"
	"github.com/pipeguard/pipeguard/internal/testing/win32test"
)

// TestFormatPastItsDeadlineHoldsTheVolume formats a volume whose
// MSFT_Volume.Format never answers, through the agent: the call answers
// DeadlineExceeded; the next format of that volume is refused (Aborted)
// without running, since the agent cannot see it formatted, and counted in
// pipeguard_agent_storage_operations_refused_total; another volume formats.
func TestFormatPastItsDeadlineHoldsTheVolume(t *testing.T) {
	const (
		vol   = `\\?\Volume{452e318a-5cde-421e-9831-b9853c521012}\`
		other = `\\?\Volume{0c9b2f1e-1111-4d2a-9d7e-3f1b2c3d4e5f}\`
	)
	w := newHostWMI()
	hung := objectPath(w, "MSFT_Volume", w.addVolume(2, vol, ""))
	w.addVolume(3, other, "")
	fake := &hangOn{Conn: w, hang: func(path, _ string, _ []wmi.Param) bool { return path == hung }}
	reg := prometheus.NewRegistry()
	host := win32test.New()
	host.AddVolume(win32test.Volume{ID: nodeVolumeID, FileSystem: "NTFS"})
	host.AddDrive(`C:\`, nodeVolumeID)
	r := start(t, Options{GOOS: "windows", KubeletPath: `C:\var\lib\kubelet`, Filesystem: &fakeFS{}, WMI: fake, Win32: host,
		Registry: reg, HostCallTimeouts: map[string]time.Duration{"volume": 300 * time.Millisecond}})
	client := volv1.NewVolumeClient(r.dial(t, "volume", "v1"))
	ctx := context.Background()
	_, err := client.FormatVolume(ctx, &volv1.FormatVolumeRequest{VolumeId: vol})
	wantStatus(t, err, codes.DeadlineExceeded, "volume MSFT_Volume.Format did not finish within 300ms")
	_, err = client.FormatVolume(ctx, &volv1.FormatVolumeRequest{VolumeId: vol})
	wantStatus(t, err, codes.Aborted, "volume FormatVolume of "+vol+" is refused: FormatVolume of this volume started ")
	if !strings.HasSuffix(err.Error(), ", retry later") {
		t.Fatalf("refusal %q does not end with its advice", err)
	}
	if _, err := client.FormatVolume(ctx, &volv1.FormatVolumeRequest{VolumeId: other}); err != nil {
		t.Fatalf("formatting another volume: %v", err)
	}
	if n := len(fake.called("Format")); n != 2 {
		t.Fatalf("%d formats reached the host, want 2 (the first format, the other volume's)", n)
	}
	refused, err := testutil.GatherAndCount(reg, "pipeguard_agent_storage_operations_refused_total")
	if err != nil || refused != 1 {
		t.Fatalf("pipeguard_agent_storage_operations_refused_total: %d series, %v", refused, err)
	}
	if err := testutil.GatherAndCompare(reg, strings.NewReader(`
# HELP pipeguard_agent_storage_operations_refused_total Storage operations refused (Aborted) because another operation on the same volume, disk, share or iSCSI target was running or might still be, by API group and refused method.
# TYPE pipeguard_agent_storage_operations_refused_total counter
pipeguard_agent_storage_operations_refused_total{group="volume",op="FormatVolume"} 1
`), "pipeguard_agent_storage_operations_refused_total"); err != nil {
		t.Fatal(err)
	}
}
