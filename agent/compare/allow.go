package compare

import (
	"context"

	diskapi "github.com/kubernetes-csi/csi-proxy/client/api/disk/v1"
	fsapi "github.com/kubernetes-csi/csi-proxy/client/api/filesystem/v1"
	sysapi "github.com/kubernetes-csi/csi-proxy/client/api/system/v1alpha1"
	volapi "github.com/kubernetes-csi/csi-proxy/client/api/volume/v1"
	"google.golang.org/grpc"
)

// Allowed lists, per API group, every method compare may call. Each only
// reads; the tests check that each is in the method table and that the gate
// does not count it as mutating.
var Allowed = map[string][]string{
	"disk":       {"ListDiskLocations", "ListDiskIDs", "GetDiskStats"},
	"volume":     {"ListVolumesOnDisk", "IsVolumeFormatted", "GetVolumeStats", "GetVolumeIDFromTargetPath"},
	"system":     {"GetBIOSSerialNumber", "GetService"},
	"filesystem": {"PathExists"},
}

// Versions are the API versions compare reads, per group: the newest of
// each in CSI Proxy v1.3.0.
var Versions = map[string]string{
	"disk":       "v1",
	"volume":     "v1",
	"system":     "v1alpha1",
	"filesystem": "v1",
}

// Groups are the groups compare reads, in the order it reads them.
var Groups = []string{"disk", "volume", "filesystem", "system"}

// Unread names the groups compare does not read, and why.
var Unread = map[string]string{
	"smb":   "not compared: the smb API has no method that reads without changing the host",
	"iscsi": "not compared: the iscsi API lists target portals only after AddTargetPortal, which changes the host",
}

// DiskReader is the part of a disk v1 client compare uses: read-only
// methods only.
type DiskReader interface {
	ListDiskLocations(ctx context.Context, in *diskapi.ListDiskLocationsRequest, opts ...grpc.CallOption) (*diskapi.ListDiskLocationsResponse, error)
	ListDiskIDs(ctx context.Context, in *diskapi.ListDiskIDsRequest, opts ...grpc.CallOption) (*diskapi.ListDiskIDsResponse, error)
	GetDiskStats(ctx context.Context, in *diskapi.GetDiskStatsRequest, opts ...grpc.CallOption) (*diskapi.GetDiskStatsResponse, error)
}

// VolumeReader is the part of a volume v1 client compare uses: read-only
// methods only.
type VolumeReader interface {
	ListVolumesOnDisk(ctx context.Context, in *volapi.ListVolumesOnDiskRequest, opts ...grpc.CallOption) (*volapi.ListVolumesOnDiskResponse, error)
	IsVolumeFormatted(ctx context.Context, in *volapi.IsVolumeFormattedRequest, opts ...grpc.CallOption) (*volapi.IsVolumeFormattedResponse, error)
	GetVolumeStats(ctx context.Context, in *volapi.GetVolumeStatsRequest, opts ...grpc.CallOption) (*volapi.GetVolumeStatsResponse, error)
	GetVolumeIDFromTargetPath(ctx context.Context, in *volapi.GetVolumeIDFromTargetPathRequest, opts ...grpc.CallOption) (*volapi.GetVolumeIDFromTargetPathResponse, error)
}

// SystemReader is the part of a system v1alpha1 client compare uses:
// read-only methods only.
type SystemReader interface {
	GetBIOSSerialNumber(ctx context.Context, in *sysapi.GetBIOSSerialNumberRequest, opts ...grpc.CallOption) (*sysapi.GetBIOSSerialNumberResponse, error)
	GetService(ctx context.Context, in *sysapi.GetServiceRequest, opts ...grpc.CallOption) (*sysapi.GetServiceResponse, error)
}

// FilesystemReader is the part of a filesystem v1 client compare uses:
// read-only methods only.
type FilesystemReader interface {
	PathExists(ctx context.Context, in *fsapi.PathExistsRequest, opts ...grpc.CallOption) (*fsapi.PathExistsResponse, error)
}

// Conns are one side's clients: CSI Proxy's or pipeguard's.
type Conns struct {
	Disk       DiskReader
	Volume     VolumeReader
	System     SystemReader
	Filesystem FilesystemReader
	// Close releases the connections; nil: nothing to release.
	Close func()
}

// close calls c.Close when set.
func (c Conns) close() {
	if c.Close != nil {
		c.Close()
	}
}
