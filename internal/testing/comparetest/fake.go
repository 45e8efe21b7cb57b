// Package comparetest is a fake side for tests of package compare: a host
// whose answers are plain data, reached without gRPC.
package comparetest

import (
	"context"
	"sync"

	diskapi "github.com/kubernetes-csi/csi-proxy/client/api/disk/v1"
	fsapi "github.com/kubernetes-csi/csi-proxy/client/api/filesystem/v1"
	sysapi "github.com/kubernetes-csi/csi-proxy/client/api/system/v1alpha1"
	volapi "github.com/kubernetes-csi/csi-proxy/client/api/volume/v1"
	"google.golang.org/grpc"

	"github.com/pipeguard/pipeguard/agent/compare"
)

// Disk is a disk of the fake host.
type Disk struct {
	Adapter, Bus, Target, LUN string
	Page83, Serial            string
	Size                      int64
	Volumes                   []string
}

// Volume is a volume of the fake host.
type Volume struct {
	Formatted   bool
	Total, Used int64
}

// Service is a service of the fake host.
type Service struct {
	DisplayName string
	StartType   sysapi.StartType
	Status      sysapi.ServiceStatus
}

// Side is a fake CSI Proxy or pipeguard. Errors, by method name, make
// that method fail; Hang makes it wait for its deadline.
type Side struct {
	Disks    map[uint32]Disk
	Volumes  map[string]Volume
	Targets  map[string]string // target path → volume ID
	Paths    map[string]bool
	Serial   string
	Services map[string]Service
	Errors   map[string]error
	Hang     map[string]bool

	mu    sync.Mutex
	calls []string
}

// Calls returns the methods called, in order.
func (s *Side) Calls() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.calls...)
}

func (s *Side) enter(ctx context.Context, method string) error {
	s.mu.Lock()
	s.calls = append(s.calls, method)
	s.mu.Unlock()
	if s.Hang[method] {
		<-ctx.Done()
		return ctx.Err()
	}
	return s.Errors[method]
}

// Conns returns the side's clients.
func (s *Side) Conns() compare.Conns {
	return compare.Conns{Disk: disk{s}, Volume: volume{s}, System: system{s}, Filesystem: filesystem{s}}
}

type disk struct{ s *Side }

func (d disk) ListDiskLocations(ctx context.Context, _ *diskapi.ListDiskLocationsRequest, _ ...grpc.CallOption) (*diskapi.ListDiskLocationsResponse, error) {
	if err := d.s.enter(ctx, "ListDiskLocations"); err != nil {
		return nil, err
	}
	m := map[uint32]*diskapi.DiskLocation{}
	for n, x := range d.s.Disks {
		m[n] = &diskapi.DiskLocation{Adapter: x.Adapter, Bus: x.Bus, Target: x.Target, LUNID: x.LUN}
	}
	return &diskapi.ListDiskLocationsResponse{DiskLocations: m}, nil
}

func (d disk) ListDiskIDs(ctx context.Context, _ *diskapi.ListDiskIDsRequest, _ ...grpc.CallOption) (*diskapi.ListDiskIDsResponse, error) {
	if err := d.s.enter(ctx, "ListDiskIDs"); err != nil {
		return nil, err
	}
	m := map[uint32]*diskapi.DiskIDs{}
	for n, x := range d.s.Disks {
		m[n] = &diskapi.DiskIDs{Page83: x.Page83, SerialNumber: x.Serial}
	}
	return &diskapi.ListDiskIDsResponse{DiskIDs: m}, nil
}

func (d disk) GetDiskStats(ctx context.Context, in *diskapi.GetDiskStatsRequest, _ ...grpc.CallOption) (*diskapi.GetDiskStatsResponse, error) {
	if err := d.s.enter(ctx, "GetDiskStats"); err != nil {
		return nil, err
	}
	x, ok := d.s.Disks[in.DiskNumber]
	if !ok {
		return nil, errNo("disk")
	}
	return &diskapi.GetDiskStatsResponse{TotalBytes: x.Size}, nil
}

type volume struct{ s *Side }

func (v volume) ListVolumesOnDisk(ctx context.Context, in *volapi.ListVolumesOnDiskRequest, _ ...grpc.CallOption) (*volapi.ListVolumesOnDiskResponse, error) {
	if err := v.s.enter(ctx, "ListVolumesOnDisk"); err != nil {
		return nil, err
	}
	x, ok := v.s.Disks[in.DiskNumber]
	if !ok {
		return nil, errNo("disk")
	}
	return &volapi.ListVolumesOnDiskResponse{VolumeIds: x.Volumes}, nil
}

func (v volume) IsVolumeFormatted(ctx context.Context, in *volapi.IsVolumeFormattedRequest, _ ...grpc.CallOption) (*volapi.IsVolumeFormattedResponse, error) {
	if err := v.s.enter(ctx, "IsVolumeFormatted"); err != nil {
		return nil, err
	}
	x, ok := v.s.Volumes[in.VolumeId]
	if !ok {
		return nil, errNo("volume")
	}
	return &volapi.IsVolumeFormattedResponse{Formatted: x.Formatted}, nil
}

func (v volume) GetVolumeStats(ctx context.Context, in *volapi.GetVolumeStatsRequest, _ ...grpc.CallOption) (*volapi.GetVolumeStatsResponse, error) {
	if err := v.s.enter(ctx, "GetVolumeStats"); err != nil {
		return nil, err
	}
	x, ok := v.s.Volumes[in.VolumeId]
	if !ok {
		return nil, errNo("volume")
	}
	return &volapi.GetVolumeStatsResponse{TotalBytes: x.Total, UsedBytes: x.Used}, nil
}

func (v volume) GetVolumeIDFromTargetPath(ctx context.Context, in *volapi.GetVolumeIDFromTargetPathRequest, _ ...grpc.CallOption) (*volapi.GetVolumeIDFromTargetPathResponse, error) {
	if err := v.s.enter(ctx, "GetVolumeIDFromTargetPath"); err != nil {
		return nil, err
	}
	id, ok := v.s.Targets[in.TargetPath]
	if !ok {
		return nil, errNo("mount")
	}
	return &volapi.GetVolumeIDFromTargetPathResponse{VolumeId: id}, nil
}

type system struct{ s *Side }

func (y system) GetBIOSSerialNumber(ctx context.Context, _ *sysapi.GetBIOSSerialNumberRequest, _ ...grpc.CallOption) (*sysapi.GetBIOSSerialNumberResponse, error) {
	if err := y.s.enter(ctx, "GetBIOSSerialNumber"); err != nil {
		return nil, err
	}
	return &sysapi.GetBIOSSerialNumberResponse{SerialNumber: y.s.Serial}, nil
}

func (y system) GetService(ctx context.Context, in *sysapi.GetServiceRequest, _ ...grpc.CallOption) (*sysapi.GetServiceResponse, error) {
	if err := y.s.enter(ctx, "GetService"); err != nil {
		return nil, err
	}
	x, ok := y.s.Services[in.Name]
	if !ok {
		return nil, errNo("service")
	}
	return &sysapi.GetServiceResponse{DisplayName: x.DisplayName, StartType: x.StartType, Status: x.Status}, nil
}

type filesystem struct{ s *Side }

func (f filesystem) PathExists(ctx context.Context, in *fsapi.PathExistsRequest, _ ...grpc.CallOption) (*fsapi.PathExistsResponse, error) {
	if err := f.s.enter(ctx, "PathExists"); err != nil {
		return nil, err
	}
	return &fsapi.PathExistsResponse{Exists: f.s.Paths[in.Path]}, nil
}

type errNo string

func (e errNo) Error() string { return "no such " + string(e) }

// Node returns a side with two disks, three volumes, a target path, the
// kubelet directory and the default services: the same data each call.
func Node() *Side {
	return &Side{
		Disks: map[uint32]Disk{
			0: {Adapter: "0", Bus: "0", Target: "0", LUN: "0", Page83: "6002248029fdc6b0b5aa0e5c0b9ae3ed", Serial: "OSDISK", Size: 128 << 30, Volumes: []string{`\\?\Volume{a1}\`, `\\?\Volume{a2}\`}},
			1: {Adapter: "1", Bus: "0", Target: "0", LUN: "3", Page83: "Google pvc-1", Serial: "pvc-1", Size: 10 << 30, Volumes: []string{`\\?\Volume{b1}\`}},
		},
		Volumes: map[string]Volume{
			`\\?\Volume{a1}\`: {Formatted: true, Total: 100 << 20, Used: 30 << 20},
			`\\?\Volume{a2}\`: {Formatted: true, Total: 127 << 30, Used: 40 << 30},
			`\\?\Volume{b1}\`: {Formatted: false, Total: 10 << 30, Used: 0},
		},
		Targets: map[string]string{`C:\var\lib\kubelet\plugins\kubernetes.io\csi\pd.csi.storage.gke.io\h\globalmount`: `\\?\Volume{b1}\`},
		Paths:   map[string]bool{`C:\var\lib\kubelet`: true},
		Serial:  "GoogleCloud-1234",
		Services: map[string]Service{
			"csiproxy":          {DisplayName: "CSI Proxy", StartType: sysapi.StartType_AUTOMATIC, Status: sysapi.ServiceStatus_RUNNING},
			"LanmanWorkstation": {DisplayName: "Workstation", StartType: sysapi.StartType_AUTOMATIC, Status: sysapi.ServiceStatus_RUNNING},
			"MSiSCSI":           {DisplayName: "Microsoft iSCSI Initiator Service", StartType: sysapi.StartType_MANUAL, Status: sysapi.ServiceStatus_STOPPED},
		},
	}
}
