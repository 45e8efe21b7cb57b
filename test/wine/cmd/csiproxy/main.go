//go:build windows

// Command csiproxy is a stand-in CSI Proxy for the tests of
// pipeguard-agent compare under Wine (test/wine). It serves CSI Proxy's
// disk v1, volume v1, filesystem v1 and system v1alpha1 APIs, built from
// the client library's generated server interfaces, on CSI Proxy's pipe
// names, and answers as pipeguard does on that host: its answers are those
// of the agent's group servers (compare.Local) over the host -fixture
// describes, changed as -diff says. Every method it is called with is
// appended to -log, one line each, mutating ones included (they answer
// Unimplemented). It prints "listening" once the pipes are open.
//
//	csiproxy -fixture C:\...\win32.json -kubelet-path C:\...\kubelet [-diff lun] [-log C:\...\calls.log]
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"sync"

	"github.com/Microsoft/go-winio"
	diskapi "github.com/kubernetes-csi/csi-proxy/client/api/disk/v1"
	fsapi "github.com/kubernetes-csi/csi-proxy/client/api/filesystem/v1"
	sysapi "github.com/kubernetes-csi/csi-proxy/client/api/system/v1alpha1"
	volapi "github.com/kubernetes-csi/csi-proxy/client/api/volume/v1"
	"google.golang.org/grpc"

	"github.com/pipeguard/pipeguard/agent/compare"
)

// diffs are the kinds of difference -diff makes.
var diffs = map[string]string{
	"":             "none: answer as pipeguard does",
	"missing-disk": "ListDiskLocations and ListDiskIDs leave out the disk of the highest number",
	"lun":          "ListDiskLocations answers LUN 9 for every disk",
	"page83":       "ListDiskIDs answers another page 83 identifier for every disk",
	"serial":       "ListDiskIDs answers another serial number for every disk",
	"volumes":      "ListVolumesOnDisk lists one more volume on every disk",
	"formatted":    "IsVolumeFormatted answers the opposite",
	"stats":        "GetVolumeStats answers 10 GiB more used bytes (beyond the tolerance)",
	"stats-small":  "GetVolumeStats answers 1 MiB more used bytes (within the tolerance)",
	"bios":         "GetBIOSSerialNumber answers another serial number",
	"service":      "GetService answers STOPPED for a running service and RUNNING otherwise",
	"error":        "GetBIOSSerialNumber fails",
	"hang":         "ListDiskIDs never answers",
	"hang-all":     "no method ever answers",
	"huge":         "ListVolumesOnDisk lists 5000 volumes",
}

const extraVolume = `\\?\Volume{00000000-0000-0000-0000-00000000beef}\`

func main() {
	fixture := flag.String("fixture", "", "JSON file describing the host (as PIPEGUARD_WIN32_FIXTURE)")
	kubelet := flag.String("kubelet-path", `C:\var\lib\kubelet`, "kubelet directory")
	diff := flag.String("diff", "", "the difference to make")
	logPath := flag.String("log", "", "file every method called is appended to")
	flag.Parse()
	if _, ok := diffs[*diff]; !ok {
		fmt.Fprintf(os.Stderr, "csiproxy: unknown -diff %q\n", *diff)
		os.Exit(2)
	}
	host, err := loadFixture(*fixture)
	if err != nil {
		fmt.Fprintf(os.Stderr, "csiproxy: -fixture: %v\n", err)
		os.Exit(2)
	}
	pg, err := compare.Local(compare.LocalOptions{KubeletPath: *kubelet, Win32: host})
	if err != nil {
		fmt.Fprintf(os.Stderr, "csiproxy: %v\n", err)
		os.Exit(2)
	}
	var log *os.File
	if *logPath != "" {
		if log, err = os.OpenFile(*logPath, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644); err != nil {
			fmt.Fprintf(os.Stderr, "csiproxy: -log: %v\n", err)
			os.Exit(2)
		}
	}
	var mu sync.Mutex
	record := func(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
		if log != nil {
			mu.Lock()
			fmt.Fprintln(log, info.FullMethod)
			mu.Unlock()
		}
		if *diff == "hang-all" {
			<-ctx.Done()
			return nil, ctx.Err()
		}
		return handler(ctx, req)
	}
	srv := grpc.NewServer(grpc.UnaryInterceptor(record))
	diskapi.RegisterDiskServer(srv, &disk{pg: pg.Disk, diff: *diff})
	volapi.RegisterVolumeServer(srv, &volume{pg: pg.Volume, diff: *diff})
	fsapi.RegisterFilesystemServer(srv, &filesystem{pg: pg.Filesystem})
	sysapi.RegisterSystemServer(srv, &system{pg: pg.System, diff: *diff})
	errs := make(chan error, len(compare.Groups))
	for _, g := range compare.Groups {
		l, err := winio.ListenPipe(compare.PipePath(compare.DefaultPipePrefix, g), nil)
		if err != nil {
			fmt.Fprintf(os.Stderr, "csiproxy: %v\n", err)
			os.Exit(1)
		}
		go func() { errs <- srv.Serve(l) }()
	}
	fmt.Println("listening")
	err = <-errs
	fmt.Fprintf(os.Stderr, "csiproxy: %v\n", err)
	os.Exit(1)
}

type disk struct {
	diskapi.UnimplementedDiskServer
	pg   compare.DiskReader
	diff string
}

func (d *disk) ListDiskLocations(ctx context.Context, in *diskapi.ListDiskLocationsRequest) (*diskapi.ListDiskLocationsResponse, error) {
	r, err := d.pg.ListDiskLocations(ctx, in)
	if err != nil {
		return nil, err
	}
	switch d.diff {
	case "missing-disk":
		delete(r.DiskLocations, highest(r.DiskLocations))
	case "lun":
		for _, l := range r.DiskLocations {
			l.LUNID = "9"
		}
	}
	return r, nil
}

func highest[V any](m map[uint32]V) uint32 {
	var top uint32
	for n := range m {
		top = max(top, n)
	}
	return top
}

func (d *disk) ListDiskIDs(ctx context.Context, in *diskapi.ListDiskIDsRequest) (*diskapi.ListDiskIDsResponse, error) {
	if d.diff == "hang" {
		<-ctx.Done()
		return nil, ctx.Err()
	}
	r, err := d.pg.ListDiskIDs(ctx, in)
	if err != nil {
		return nil, err
	}
	switch d.diff {
	case "missing-disk":
		delete(r.DiskIDs, highest(r.DiskIDs))
	case "page83":
		for _, id := range r.DiskIDs {
			id.Page83 = "other " + id.Page83
		}
	case "serial":
		for _, id := range r.DiskIDs {
			id.SerialNumber = "other " + id.SerialNumber
		}
	}
	return r, nil
}

func (d *disk) GetDiskStats(ctx context.Context, in *diskapi.GetDiskStatsRequest) (*diskapi.GetDiskStatsResponse, error) {
	return d.pg.GetDiskStats(ctx, in)
}

type volume struct {
	volapi.UnimplementedVolumeServer
	pg   compare.VolumeReader
	diff string
}

func (v *volume) ListVolumesOnDisk(ctx context.Context, in *volapi.ListVolumesOnDiskRequest) (*volapi.ListVolumesOnDiskResponse, error) {
	r, err := v.pg.ListVolumesOnDisk(ctx, in)
	if err != nil {
		return nil, err
	}
	switch v.diff {
	case "volumes":
		r.VolumeIds = append(r.VolumeIds, extraVolume)
	case "huge":
		for i := range 5000 {
			r.VolumeIds = append(r.VolumeIds, fmt.Sprintf(`\\?\Volume{00000000-0000-0000-0000-%012d}\`, i))
		}
	}
	return r, nil
}

func (v *volume) IsVolumeFormatted(ctx context.Context, in *volapi.IsVolumeFormattedRequest) (*volapi.IsVolumeFormattedResponse, error) {
	r, err := v.pg.IsVolumeFormatted(ctx, in)
	if err == nil && v.diff == "formatted" {
		r.Formatted = !r.Formatted
	}
	return r, err
}

func (v *volume) GetVolumeStats(ctx context.Context, in *volapi.GetVolumeStatsRequest) (*volapi.GetVolumeStatsResponse, error) {
	r, err := v.pg.GetVolumeStats(ctx, in)
	if err == nil {
		switch v.diff {
		case "stats":
			r.UsedBytes += 10 << 30
		case "stats-small":
			r.UsedBytes += 1 << 20
		}
	}
	return r, err
}

func (v *volume) GetVolumeIDFromTargetPath(ctx context.Context, in *volapi.GetVolumeIDFromTargetPathRequest) (*volapi.GetVolumeIDFromTargetPathResponse, error) {
	return v.pg.GetVolumeIDFromTargetPath(ctx, in)
}

type filesystem struct {
	fsapi.UnimplementedFilesystemServer
	pg compare.FilesystemReader
}

func (f *filesystem) PathExists(ctx context.Context, in *fsapi.PathExistsRequest) (*fsapi.PathExistsResponse, error) {
	return f.pg.PathExists(ctx, in)
}

type system struct {
	sysapi.UnimplementedSystemServer
	pg   compare.SystemReader
	diff string
}

func (s *system) GetBIOSSerialNumber(ctx context.Context, in *sysapi.GetBIOSSerialNumberRequest) (*sysapi.GetBIOSSerialNumberResponse, error) {
	switch s.diff {
	case "error":
		return nil, fmt.Errorf("wmi: no Win32_BIOS")
	case "bios":
		return &sysapi.GetBIOSSerialNumberResponse{SerialNumber: "other serial"}, nil
	}
	return s.pg.GetBIOSSerialNumber(ctx, in)
}

func (s *system) GetService(ctx context.Context, in *sysapi.GetServiceRequest) (*sysapi.GetServiceResponse, error) {
	r, err := s.pg.GetService(ctx, in)
	if err == nil && s.diff == "service" {
		if r.Status == sysapi.ServiceStatus_RUNNING {
			r.Status = sysapi.ServiceStatus_STOPPED
		} else {
			r.Status = sysapi.ServiceStatus_RUNNING
		}
	}
	return r, err
}
