package compare_test

import (
	"context"
	"errors"
	"net"
	"strings"
	"testing"
	"time"

	diskapi "github.com/kubernetes-csi/csi-proxy/client/api/disk/v1"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/test/bufconn"

	"github.com/pipeguard/pipeguard/agent/compare"
	hostsys "github.com/pipeguard/pipeguard/agent/hostops/system"
	"github.com/pipeguard/pipeguard/agent/hostops/win32"
	"github.com/pipeguard/pipeguard/internal/testing/comparetest"
	"github.com/pipeguard/pipeguard/internal/testing/win32test"
)

// fakeSystem is a host with one service; starting or stopping fails the
// test.
type fakeSystem struct{ t *testing.T }

func (fakeSystem) BIOSSerialNumber(context.Context) (string, error) { return "SN-1", nil }
func (s fakeSystem) StartService(context.Context, string) error {
	s.t.Error("StartService called")
	return errors.New("no")
}
func (s fakeSystem) StopService(context.Context, string, bool) error {
	s.t.Error("StopService called")
	return errors.New("no")
}
func (fakeSystem) GetService(_ context.Context, name string) (hostsys.Service, error) {
	if name != "MSiSCSI" {
		return hostsys.Service{}, errors.New("no such service")
	}
	return hostsys.Service{DisplayName: "iSCSI", StartType: 3, Status: 1}, nil
}

// TestLocalAnswers: pipeguard's side answers from the agent's group
// servers over the host it is given, makes only reads there, and compares
// identical with itself.
func TestLocalAnswers(t *testing.T) {
	host := win32test.New()
	host.AddDisk(win32test.Disk{Number: 0, SCSI: &win32.SCSIAddress{PortNumber: 1, TargetId: 2, Lun: 3}, Serial: "S0", Size: 1 << 30})
	host.AddVolume(win32test.Volume{ID: `\\?\Volume{11111111-2222-3333-4444-555555555555}\`, PartitionNumber: 1, FileSystem: "NTFS", Total: 1 << 30, Free: 1 << 29,
		Extents: []win32.DiskExtent{{DiskNumber: 0, StartingOffset: 1 << 20, ExtentLength: 1<<30 - 1<<20}}})
	kubelet := t.TempDir()
	local := func() compare.Conns {
		c, err := compare.Local(compare.LocalOptions{KubeletPath: kubelet, GOOS: "linux", Win32: host, System: fakeSystem{t}})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(c.Close)
		return c
	}
	o := compare.Options{Timeout: 10 * time.Second, KubeletPath: kubelet, Services: []string{"MSiSCSI", "nope"}}
	r := compare.Compare(context.Background(), local(), local(), o)
	if !r.Identical {
		t.Fatalf("pipeguard differs from itself: %+v", r.Rows)
	}
	want := map[string]string{
		"disk.ListDiskLocations":     `disk 0=adapter 1, bus "", target 2, LUN 3`,
		"disk.GetDiskStats":          "totalBytes=1073741824",
		"volume.ListVolumesOnDisk":   `\\?\Volume{11111111-2222-3333-4444-555555555555}\`,
		"volume.IsVolumeFormatted":   "formatted=true",
		"volume.GetVolumeStats":      "totalBytes=1073741824; usedBytes=536870912",
		"filesystem.PathExists":      "exists=true",
		"system.GetBIOSSerialNumber": "serialNumber=SN-1",
		"system.GetService":          "displayName=iSCSI; startType=MANUAL; status=STOPPED",
	}
	for _, row := range r.Rows {
		if w, ok := want[row.RPC]; ok && strings.Contains(row.Pipeguard, w) {
			delete(want, row.RPC)
		}
	}
	for rpc, w := range want {
		t.Errorf("no %s answer holds %q: %+v", rpc, w, r.Rows)
	}
	for _, c := range host.Calls() {
		switch c.Func {
		case "SetVolumeMountPointW", "DeleteVolumeMountPointW", "FlushFileBuffers", "CreateSymbolicLinkW":
			t.Errorf("host call %s %s", c.Func, c.Path)
		}
	}
}

// hugeDisks answers ListDiskLocations with more than compare reads.
type hugeDisks struct {
	*diskapi.UnimplementedDiskServer
}

func (hugeDisks) ListDiskLocations(context.Context, *diskapi.ListDiskLocationsRequest) (*diskapi.ListDiskLocationsResponse, error) {
	m := map[uint32]*diskapi.DiskLocation{}
	for n := uint32(0); n < 60000; n++ {
		m[n] = &diskapi.DiskLocation{Adapter: strings.Repeat("a", 100)}
	}
	return &diskapi.ListDiskLocationsResponse{DiskLocations: m}, nil
}

// TestAnswerTooLarge: an answer larger than MaxMessage is not read; the
// call is reported as failing on that side.
func TestAnswerTooLarge(t *testing.T) {
	lis := bufconn.Listen(1 << 20)
	srv := grpc.NewServer()
	diskapi.RegisterDiskServer(srv, hugeDisks{})
	go func() { _ = srv.Serve(lis) }()
	defer srv.Stop()
	conn, err := grpc.NewClient("passthrough:///huge", grpc.WithContextDialer(func(ctx context.Context, _ string) (net.Conn, error) { return lis.DialContext(ctx) }),
		grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	csi := comparetest.Node().Conns()
	csi.Disk = diskapi.NewDiskClient(conn)
	r := compare.Compare(context.Background(), csi, comparetest.Node().Conns(), compare.Options{Timeout: 10 * time.Second})
	row := r.Rows[0]
	if row.RPC != "disk.ListDiskLocations" || len(row.Differences) != 1 || row.Differences[0] != "fails on CSI Proxy only: the answer is larger than the 4194304 bytes compare reads" {
		t.Errorf("%+v", row)
	}
}
