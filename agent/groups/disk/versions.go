package disk

// Adapters for v1beta3 and v1, which address disks by number.

import (
	"context"

	"google.golang.org/grpc"

	diskv1 "github.com/kubernetes-csi/csi-proxy/client/api/disk/v1"
	diskv1beta3 "github.com/kubernetes-csi/csi-proxy/client/api/disk/v1beta3"
)

// serverV1beta3 adapts disk v1beta3 to the internal server.
type serverV1beta3 struct{ s *Server }

func (s *Server) registerV1beta3(g *grpc.Server) { diskv1beta3.RegisterDiskServer(g, serverV1beta3{s}) }

func (x serverV1beta3) ListDiskLocations(ctx context.Context, _ *diskv1beta3.ListDiskLocationsRequest) (*diskv1beta3.ListDiskLocationsResponse, error) {
	locs, err := x.s.host.ListDiskLocations(ctx)
	if err != nil {
		return nil, err
	}
	out := make(map[uint32]*diskv1beta3.DiskLocation, len(locs))
	for n, l := range locs {
		out[n] = &diskv1beta3.DiskLocation{Adapter: l.Adapter, Bus: l.Bus, Target: l.Target, LUNID: l.LUNID}
	}
	return &diskv1beta3.ListDiskLocationsResponse{DiskLocations: out}, nil
}

func (x serverV1beta3) PartitionDisk(ctx context.Context, r *diskv1beta3.PartitionDiskRequest) (*diskv1beta3.PartitionDiskResponse, error) {
	if err := x.s.host.PartitionDisk(ctx, r.GetDiskNumber()); err != nil {
		return nil, err
	}
	return &diskv1beta3.PartitionDiskResponse{}, nil
}

func (x serverV1beta3) Rescan(ctx context.Context, _ *diskv1beta3.RescanRequest) (*diskv1beta3.RescanResponse, error) {
	if err := x.s.host.Rescan(ctx); err != nil {
		return nil, err
	}
	return &diskv1beta3.RescanResponse{}, nil
}

func (x serverV1beta3) ListDiskIDs(ctx context.Context, _ *diskv1beta3.ListDiskIDsRequest) (*diskv1beta3.ListDiskIDsResponse, error) {
	ids, err := x.s.host.ListDiskIDs(ctx)
	if err != nil {
		return nil, err
	}
	out := make(map[uint32]*diskv1beta3.DiskIDs, len(ids))
	for n, id := range ids {
		out[n] = &diskv1beta3.DiskIDs{Page83: id.Page83, SerialNumber: id.SerialNumber}
	}
	return &diskv1beta3.ListDiskIDsResponse{DiskIDs: out}, nil
}

func (x serverV1beta3) GetDiskStats(ctx context.Context, r *diskv1beta3.GetDiskStatsRequest) (*diskv1beta3.GetDiskStatsResponse, error) {
	size, err := x.s.host.GetDiskStats(ctx, r.GetDiskNumber())
	if err != nil {
		return nil, err
	}
	return &diskv1beta3.GetDiskStatsResponse{TotalBytes: size}, nil
}

func (x serverV1beta3) SetDiskState(ctx context.Context, r *diskv1beta3.SetDiskStateRequest) (*diskv1beta3.SetDiskStateResponse, error) {
	if err := x.s.host.SetDiskState(ctx, r.GetDiskNumber(), r.GetIsOnline()); err != nil {
		return nil, err
	}
	return &diskv1beta3.SetDiskStateResponse{}, nil
}

func (x serverV1beta3) GetDiskState(ctx context.Context, r *diskv1beta3.GetDiskStateRequest) (*diskv1beta3.GetDiskStateResponse, error) {
	online, err := x.s.host.GetDiskState(ctx, r.GetDiskNumber())
	if err != nil {
		return nil, err
	}
	return &diskv1beta3.GetDiskStateResponse{IsOnline: online}, nil
}

// serverV1 adapts disk v1 to the internal server.
type serverV1 struct{ s *Server }

func (s *Server) registerV1(g *grpc.Server) { diskv1.RegisterDiskServer(g, serverV1{s}) }

func (x serverV1) ListDiskLocations(ctx context.Context, _ *diskv1.ListDiskLocationsRequest) (*diskv1.ListDiskLocationsResponse, error) {
	locs, err := x.s.host.ListDiskLocations(ctx)
	if err != nil {
		return nil, err
	}
	out := make(map[uint32]*diskv1.DiskLocation, len(locs))
	for n, l := range locs {
		out[n] = &diskv1.DiskLocation{Adapter: l.Adapter, Bus: l.Bus, Target: l.Target, LUNID: l.LUNID}
	}
	return &diskv1.ListDiskLocationsResponse{DiskLocations: out}, nil
}

func (x serverV1) PartitionDisk(ctx context.Context, r *diskv1.PartitionDiskRequest) (*diskv1.PartitionDiskResponse, error) {
	if err := x.s.host.PartitionDisk(ctx, r.GetDiskNumber()); err != nil {
		return nil, err
	}
	return &diskv1.PartitionDiskResponse{}, nil
}

func (x serverV1) Rescan(ctx context.Context, _ *diskv1.RescanRequest) (*diskv1.RescanResponse, error) {
	if err := x.s.host.Rescan(ctx); err != nil {
		return nil, err
	}
	return &diskv1.RescanResponse{}, nil
}

func (x serverV1) ListDiskIDs(ctx context.Context, _ *diskv1.ListDiskIDsRequest) (*diskv1.ListDiskIDsResponse, error) {
	ids, err := x.s.host.ListDiskIDs(ctx)
	if err != nil {
		return nil, err
	}
	out := make(map[uint32]*diskv1.DiskIDs, len(ids))
	for n, id := range ids {
		out[n] = &diskv1.DiskIDs{Page83: id.Page83, SerialNumber: id.SerialNumber}
	}
	return &diskv1.ListDiskIDsResponse{DiskIDs: out}, nil
}

func (x serverV1) GetDiskStats(ctx context.Context, r *diskv1.GetDiskStatsRequest) (*diskv1.GetDiskStatsResponse, error) {
	size, err := x.s.host.GetDiskStats(ctx, r.GetDiskNumber())
	if err != nil {
		return nil, err
	}
	return &diskv1.GetDiskStatsResponse{TotalBytes: size}, nil
}

func (x serverV1) SetDiskState(ctx context.Context, r *diskv1.SetDiskStateRequest) (*diskv1.SetDiskStateResponse, error) {
	if err := x.s.host.SetDiskState(ctx, r.GetDiskNumber(), r.GetIsOnline()); err != nil {
		return nil, err
	}
	return &diskv1.SetDiskStateResponse{}, nil
}

func (x serverV1) GetDiskState(ctx context.Context, r *diskv1.GetDiskStateRequest) (*diskv1.GetDiskStateResponse, error) {
	online, err := x.s.host.GetDiskState(ctx, r.GetDiskNumber())
	if err != nil {
		return nil, err
	}
	return &diskv1.GetDiskStateResponse{IsOnline: online}, nil
}
