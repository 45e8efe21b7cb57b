package volume

// Adapters for v1beta3, v1 and v2alpha1, which address disks by number and
// name the mount path target_path.

import (
	"context"

	"google.golang.org/grpc"

	volv1 "github.com/kubernetes-csi/csi-proxy/client/api/volume/v1"
	volv1beta3 "github.com/kubernetes-csi/csi-proxy/client/api/volume/v1beta3"
	volv2alpha1 "github.com/kubernetes-csi/csi-proxy/client/api/volume/v2alpha1"
)

// serverV1beta3 adapts volume v1beta3 to the internal server.
type serverV1beta3 struct{ s *Server }

func (s *Server) registerV1beta3(g *grpc.Server) {
	volv1beta3.RegisterVolumeServer(g, serverV1beta3{s})
}

func (x serverV1beta3) IsVolumeFormatted(ctx context.Context, r *volv1beta3.IsVolumeFormattedRequest) (*volv1beta3.IsVolumeFormattedResponse, error) {
	ok, err := x.s.IsVolumeFormatted(ctx, r.GetVolumeId())
	if err != nil {
		return nil, err
	}
	return &volv1beta3.IsVolumeFormattedResponse{Formatted: ok}, nil
}

func (x serverV1beta3) FormatVolume(ctx context.Context, r *volv1beta3.FormatVolumeRequest) (*volv1beta3.FormatVolumeResponse, error) {
	if err := x.s.FormatVolume(ctx, r.GetVolumeId()); err != nil {
		return nil, err
	}
	return &volv1beta3.FormatVolumeResponse{}, nil
}

func (x serverV1beta3) ListVolumesOnDisk(ctx context.Context, r *volv1beta3.ListVolumesOnDiskRequest) (*volv1beta3.ListVolumesOnDiskResponse, error) {
	ids, err := x.s.ListVolumesOnDisk(ctx, r.GetDiskNumber(), r.GetPartitionNumber())
	if err != nil {
		return nil, err
	}
	return &volv1beta3.ListVolumesOnDiskResponse{VolumeIds: ids}, nil
}

func (x serverV1beta3) MountVolume(ctx context.Context, r *volv1beta3.MountVolumeRequest) (*volv1beta3.MountVolumeResponse, error) {
	if err := x.s.MountVolume(ctx, r.GetVolumeId(), "target_path", r.GetTargetPath()); err != nil {
		return nil, err
	}
	return &volv1beta3.MountVolumeResponse{}, nil
}

func (x serverV1beta3) UnmountVolume(ctx context.Context, r *volv1beta3.UnmountVolumeRequest) (*volv1beta3.UnmountVolumeResponse, error) {
	if err := x.s.UnmountVolume(ctx, r.GetVolumeId(), "target_path", r.GetTargetPath()); err != nil {
		return nil, err
	}
	return &volv1beta3.UnmountVolumeResponse{}, nil
}

func (x serverV1beta3) ResizeVolume(ctx context.Context, r *volv1beta3.ResizeVolumeRequest) (*volv1beta3.ResizeVolumeResponse, error) {
	if err := x.s.ResizeVolume(ctx, r.GetVolumeId(), "size_bytes", r.GetSizeBytes()); err != nil {
		return nil, err
	}
	return &volv1beta3.ResizeVolumeResponse{}, nil
}

func (x serverV1beta3) GetVolumeStats(ctx context.Context, r *volv1beta3.GetVolumeStatsRequest) (*volv1beta3.GetVolumeStatsResponse, error) {
	total, used, err := x.s.GetVolumeStats(ctx, r.GetVolumeId())
	if err != nil {
		return nil, err
	}
	return &volv1beta3.GetVolumeStatsResponse{TotalBytes: total, UsedBytes: used}, nil
}

func (x serverV1beta3) GetDiskNumberFromVolumeID(ctx context.Context, r *volv1beta3.GetDiskNumberFromVolumeIDRequest) (*volv1beta3.GetDiskNumberFromVolumeIDResponse, error) {
	n, err := x.s.GetDiskNumberFromVolumeID(ctx, r.GetVolumeId())
	if err != nil {
		return nil, err
	}
	return &volv1beta3.GetDiskNumberFromVolumeIDResponse{DiskNumber: n}, nil
}

func (x serverV1beta3) GetVolumeIDFromTargetPath(ctx context.Context, r *volv1beta3.GetVolumeIDFromTargetPathRequest) (*volv1beta3.GetVolumeIDFromTargetPathResponse, error) {
	id, err := x.s.GetVolumeIDFromTargetPath(ctx, "target_path", r.GetTargetPath())
	if err != nil {
		return nil, err
	}
	return &volv1beta3.GetVolumeIDFromTargetPathResponse{VolumeId: id}, nil
}

func (x serverV1beta3) WriteVolumeCache(ctx context.Context, r *volv1beta3.WriteVolumeCacheRequest) (*volv1beta3.WriteVolumeCacheResponse, error) {
	if err := x.s.WriteVolumeCache(ctx, r.GetVolumeId()); err != nil {
		return nil, err
	}
	return &volv1beta3.WriteVolumeCacheResponse{}, nil
}

// serverV1 adapts volume v1 to the internal server.
type serverV1 struct{ s *Server }

func (s *Server) registerV1(g *grpc.Server) { volv1.RegisterVolumeServer(g, serverV1{s}) }

func (x serverV1) IsVolumeFormatted(ctx context.Context, r *volv1.IsVolumeFormattedRequest) (*volv1.IsVolumeFormattedResponse, error) {
	ok, err := x.s.IsVolumeFormatted(ctx, r.GetVolumeId())
	if err != nil {
		return nil, err
	}
	return &volv1.IsVolumeFormattedResponse{Formatted: ok}, nil
}

func (x serverV1) FormatVolume(ctx context.Context, r *volv1.FormatVolumeRequest) (*volv1.FormatVolumeResponse, error) {
	if err := x.s.FormatVolume(ctx, r.GetVolumeId()); err != nil {
		return nil, err
	}
	return &volv1.FormatVolumeResponse{}, nil
}

func (x serverV1) ListVolumesOnDisk(ctx context.Context, r *volv1.ListVolumesOnDiskRequest) (*volv1.ListVolumesOnDiskResponse, error) {
	ids, err := x.s.ListVolumesOnDisk(ctx, r.GetDiskNumber(), r.GetPartitionNumber())
	if err != nil {
		return nil, err
	}
	return &volv1.ListVolumesOnDiskResponse{VolumeIds: ids}, nil
}

func (x serverV1) MountVolume(ctx context.Context, r *volv1.MountVolumeRequest) (*volv1.MountVolumeResponse, error) {
	if err := x.s.MountVolume(ctx, r.GetVolumeId(), "target_path", r.GetTargetPath()); err != nil {
		return nil, err
	}
	return &volv1.MountVolumeResponse{}, nil
}

func (x serverV1) UnmountVolume(ctx context.Context, r *volv1.UnmountVolumeRequest) (*volv1.UnmountVolumeResponse, error) {
	if err := x.s.UnmountVolume(ctx, r.GetVolumeId(), "target_path", r.GetTargetPath()); err != nil {
		return nil, err
	}
	return &volv1.UnmountVolumeResponse{}, nil
}

func (x serverV1) ResizeVolume(ctx context.Context, r *volv1.ResizeVolumeRequest) (*volv1.ResizeVolumeResponse, error) {
	if err := x.s.ResizeVolume(ctx, r.GetVolumeId(), "size_bytes", r.GetSizeBytes()); err != nil {
		return nil, err
	}
	return &volv1.ResizeVolumeResponse{}, nil
}

func (x serverV1) GetVolumeStats(ctx context.Context, r *volv1.GetVolumeStatsRequest) (*volv1.GetVolumeStatsResponse, error) {
	total, used, err := x.s.GetVolumeStats(ctx, r.GetVolumeId())
	if err != nil {
		return nil, err
	}
	return &volv1.GetVolumeStatsResponse{TotalBytes: total, UsedBytes: used}, nil
}

func (x serverV1) GetDiskNumberFromVolumeID(ctx context.Context, r *volv1.GetDiskNumberFromVolumeIDRequest) (*volv1.GetDiskNumberFromVolumeIDResponse, error) {
	n, err := x.s.GetDiskNumberFromVolumeID(ctx, r.GetVolumeId())
	if err != nil {
		return nil, err
	}
	return &volv1.GetDiskNumberFromVolumeIDResponse{DiskNumber: n}, nil
}

func (x serverV1) GetVolumeIDFromTargetPath(ctx context.Context, r *volv1.GetVolumeIDFromTargetPathRequest) (*volv1.GetVolumeIDFromTargetPathResponse, error) {
	id, err := x.s.GetVolumeIDFromTargetPath(ctx, "target_path", r.GetTargetPath())
	if err != nil {
		return nil, err
	}
	return &volv1.GetVolumeIDFromTargetPathResponse{VolumeId: id}, nil
}

func (x serverV1) WriteVolumeCache(ctx context.Context, r *volv1.WriteVolumeCacheRequest) (*volv1.WriteVolumeCacheResponse, error) {
	if err := x.s.WriteVolumeCache(ctx, r.GetVolumeId()); err != nil {
		return nil, err
	}
	return &volv1.WriteVolumeCacheResponse{}, nil
}

// serverV2alpha1 adapts volume v2alpha1 to the internal server.
type serverV2alpha1 struct{ s *Server }

func (s *Server) registerV2alpha1(g *grpc.Server) {
	volv2alpha1.RegisterVolumeServer(g, serverV2alpha1{s})
}

func (x serverV2alpha1) IsVolumeFormatted(ctx context.Context, r *volv2alpha1.IsVolumeFormattedRequest) (*volv2alpha1.IsVolumeFormattedResponse, error) {
	ok, err := x.s.IsVolumeFormatted(ctx, r.GetVolumeId())
	if err != nil {
		return nil, err
	}
	return &volv2alpha1.IsVolumeFormattedResponse{Formatted: ok}, nil
}

func (x serverV2alpha1) FormatVolume(ctx context.Context, r *volv2alpha1.FormatVolumeRequest) (*volv2alpha1.FormatVolumeResponse, error) {
	if err := x.s.FormatVolume(ctx, r.GetVolumeId()); err != nil {
		return nil, err
	}
	return &volv2alpha1.FormatVolumeResponse{}, nil
}

func (x serverV2alpha1) ListVolumesOnDisk(ctx context.Context, r *volv2alpha1.ListVolumesOnDiskRequest) (*volv2alpha1.ListVolumesOnDiskResponse, error) {
	ids, err := x.s.ListVolumesOnDisk(ctx, r.GetDiskNumber(), r.GetPartitionNumber())
	if err != nil {
		return nil, err
	}
	return &volv2alpha1.ListVolumesOnDiskResponse{VolumeIds: ids}, nil
}

func (x serverV2alpha1) MountVolume(ctx context.Context, r *volv2alpha1.MountVolumeRequest) (*volv2alpha1.MountVolumeResponse, error) {
	if err := x.s.MountVolume(ctx, r.GetVolumeId(), "target_path", r.GetTargetPath()); err != nil {
		return nil, err
	}
	return &volv2alpha1.MountVolumeResponse{}, nil
}

func (x serverV2alpha1) UnmountVolume(ctx context.Context, r *volv2alpha1.UnmountVolumeRequest) (*volv2alpha1.UnmountVolumeResponse, error) {
	if err := x.s.UnmountVolume(ctx, r.GetVolumeId(), "target_path", r.GetTargetPath()); err != nil {
		return nil, err
	}
	return &volv2alpha1.UnmountVolumeResponse{}, nil
}

func (x serverV2alpha1) ResizeVolume(ctx context.Context, r *volv2alpha1.ResizeVolumeRequest) (*volv2alpha1.ResizeVolumeResponse, error) {
	if err := x.s.ResizeVolume(ctx, r.GetVolumeId(), "size_bytes", r.GetSizeBytes()); err != nil {
		return nil, err
	}
	return &volv2alpha1.ResizeVolumeResponse{}, nil
}

func (x serverV2alpha1) GetVolumeStats(ctx context.Context, r *volv2alpha1.GetVolumeStatsRequest) (*volv2alpha1.GetVolumeStatsResponse, error) {
	total, used, err := x.s.GetVolumeStats(ctx, r.GetVolumeId())
	if err != nil {
		return nil, err
	}
	return &volv2alpha1.GetVolumeStatsResponse{TotalBytes: total, UsedBytes: used}, nil
}

func (x serverV2alpha1) GetDiskNumberFromVolumeID(ctx context.Context, r *volv2alpha1.GetDiskNumberFromVolumeIDRequest) (*volv2alpha1.GetDiskNumberFromVolumeIDResponse, error) {
	n, err := x.s.GetDiskNumberFromVolumeID(ctx, r.GetVolumeId())
	if err != nil {
		return nil, err
	}
	return &volv2alpha1.GetDiskNumberFromVolumeIDResponse{DiskNumber: n}, nil
}

func (x serverV2alpha1) GetVolumeIDFromTargetPath(ctx context.Context, r *volv2alpha1.GetVolumeIDFromTargetPathRequest) (*volv2alpha1.GetVolumeIDFromTargetPathResponse, error) {
	id, err := x.s.GetVolumeIDFromTargetPath(ctx, "target_path", r.GetTargetPath())
	if err != nil {
		return nil, err
	}
	return &volv2alpha1.GetVolumeIDFromTargetPathResponse{VolumeId: id}, nil
}

func (x serverV2alpha1) WriteVolumeCache(ctx context.Context, r *volv2alpha1.WriteVolumeCacheRequest) (*volv2alpha1.WriteVolumeCacheResponse, error) {
	if err := x.s.WriteVolumeCache(ctx, r.GetVolumeId()); err != nil {
		return nil, err
	}
	return &volv2alpha1.WriteVolumeCacheResponse{}, nil
}

func (x serverV2alpha1) GetClosestVolumeIDFromTargetPath(ctx context.Context, r *volv2alpha1.GetClosestVolumeIDFromTargetPathRequest) (*volv2alpha1.GetClosestVolumeIDFromTargetPathResponse, error) {
	id, err := x.s.GetClosestVolumeIDFromTargetPath(ctx, r.GetTargetPath())
	if err != nil {
		return nil, err
	}
	return &volv2alpha1.GetClosestVolumeIDFromTargetPathResponse{VolumeId: id}, nil
}
