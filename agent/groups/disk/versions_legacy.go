package disk

// Adapters for v1alpha1, v1beta1 and v1beta2, which send disk numbers as
// strings and key their maps by them.

import (
	"context"

	"google.golang.org/grpc"

	diskv1alpha1 "github.com/kubernetes-csi/csi-proxy/client/api/disk/v1alpha1"
	diskv1beta1 "github.com/kubernetes-csi/csi-proxy/client/api/disk/v1beta1"
	diskv1beta2 "github.com/kubernetes-csi/csi-proxy/client/api/disk/v1beta2"
)

// serverV1alpha1 adapts disk v1alpha1 to the internal server.
type serverV1alpha1 struct{ s *Server }

func (s *Server) registerV1alpha1(g *grpc.Server) {
	diskv1alpha1.RegisterDiskServer(g, serverV1alpha1{s})
}

func (x serverV1alpha1) ListDiskLocations(ctx context.Context, _ *diskv1alpha1.ListDiskLocationsRequest) (*diskv1alpha1.ListDiskLocationsResponse, error) {
	locs, err := x.s.host.ListDiskLocations(ctx)
	if err != nil {
		return nil, err
	}
	out := make(map[string]*diskv1alpha1.DiskLocation, len(locs))
	for n, l := range locs {
		out[diskKey(n)] = &diskv1alpha1.DiskLocation{Adapter: l.Adapter, Bus: l.Bus, Target: l.Target, LUNID: l.LUNID}
	}
	return &diskv1alpha1.ListDiskLocationsResponse{DiskLocations: out}, nil
}

func (x serverV1alpha1) PartitionDisk(ctx context.Context, r *diskv1alpha1.PartitionDiskRequest) (*diskv1alpha1.PartitionDiskResponse, error) {
	n, err := parseDiskID("diskID", r.GetDiskID())
	if err != nil {
		return nil, err
	}
	if err := x.s.host.PartitionDisk(ctx, n); err != nil {
		return nil, err
	}
	return &diskv1alpha1.PartitionDiskResponse{}, nil
}

func (x serverV1alpha1) Rescan(ctx context.Context, _ *diskv1alpha1.RescanRequest) (*diskv1alpha1.RescanResponse, error) {
	if err := x.s.host.Rescan(ctx); err != nil {
		return nil, err
	}
	return &diskv1alpha1.RescanResponse{}, nil
}

// GetDiskNumberByName finds a disk by its page 83 identifier.
func (x serverV1alpha1) GetDiskNumberByName(ctx context.Context, r *diskv1alpha1.GetDiskNumberByNameRequest) (*diskv1alpha1.GetDiskNumberByNameResponse, error) {
	n, err := x.s.diskNumberByName(ctx, r.GetDiskName())
	if err != nil {
		return nil, err
	}
	return &diskv1alpha1.GetDiskNumberByNameResponse{DiskNumber: diskKey(n)}, nil
}

// serverV1beta1 adapts disk v1beta1 to the internal server.
type serverV1beta1 struct{ s *Server }

func (s *Server) registerV1beta1(g *grpc.Server) { diskv1beta1.RegisterDiskServer(g, serverV1beta1{s}) }

func (x serverV1beta1) ListDiskLocations(ctx context.Context, _ *diskv1beta1.ListDiskLocationsRequest) (*diskv1beta1.ListDiskLocationsResponse, error) {
	locs, err := x.s.host.ListDiskLocations(ctx)
	if err != nil {
		return nil, err
	}
	out := make(map[string]*diskv1beta1.DiskLocation, len(locs))
	for n, l := range locs {
		out[diskKey(n)] = &diskv1beta1.DiskLocation{Adapter: l.Adapter, Bus: l.Bus, Target: l.Target, LUNID: l.LUNID}
	}
	return &diskv1beta1.ListDiskLocationsResponse{DiskLocations: out}, nil
}

func (x serverV1beta1) PartitionDisk(ctx context.Context, r *diskv1beta1.PartitionDiskRequest) (*diskv1beta1.PartitionDiskResponse, error) {
	n, err := parseDiskID("diskID", r.GetDiskID())
	if err != nil {
		return nil, err
	}
	if err := x.s.host.PartitionDisk(ctx, n); err != nil {
		return nil, err
	}
	return &diskv1beta1.PartitionDiskResponse{}, nil
}

func (x serverV1beta1) Rescan(ctx context.Context, _ *diskv1beta1.RescanRequest) (*diskv1beta1.RescanResponse, error) {
	if err := x.s.host.Rescan(ctx); err != nil {
		return nil, err
	}
	return &diskv1beta1.RescanResponse{}, nil
}

func (x serverV1beta1) ListDiskIDs(ctx context.Context, _ *diskv1beta1.ListDiskIDsRequest) (*diskv1beta1.ListDiskIDsResponse, error) {
	ids, err := x.s.host.ListDiskIDs(ctx)
	if err != nil {
		return nil, err
	}
	out := make(map[string]*diskv1beta1.DiskIDs, len(ids))
	for n, id := range ids {
		out[diskKey(n)] = &diskv1beta1.DiskIDs{Identifiers: map[string]string{idPage83: id.Page83, idSerialNumber: id.SerialNumber}}
	}
	return &diskv1beta1.ListDiskIDsResponse{DiskIDs: out}, nil
}

func (x serverV1beta1) DiskStats(ctx context.Context, r *diskv1beta1.DiskStatsRequest) (*diskv1beta1.DiskStatsResponse, error) {
	n, err := parseDiskID("diskID", r.GetDiskID())
	if err != nil {
		return nil, err
	}
	size, err := x.s.host.GetDiskStats(ctx, n)
	if err != nil {
		return nil, err
	}
	return &diskv1beta1.DiskStatsResponse{DiskSize: size}, nil
}

// serverV1beta2 adapts disk v1beta2 to the internal server.
type serverV1beta2 struct{ s *Server }

func (s *Server) registerV1beta2(g *grpc.Server) { diskv1beta2.RegisterDiskServer(g, serverV1beta2{s}) }

func (x serverV1beta2) ListDiskLocations(ctx context.Context, _ *diskv1beta2.ListDiskLocationsRequest) (*diskv1beta2.ListDiskLocationsResponse, error) {
	locs, err := x.s.host.ListDiskLocations(ctx)
	if err != nil {
		return nil, err
	}
	out := make(map[string]*diskv1beta2.DiskLocation, len(locs))
	for n, l := range locs {
		out[diskKey(n)] = &diskv1beta2.DiskLocation{Adapter: l.Adapter, Bus: l.Bus, Target: l.Target, LUNID: l.LUNID}
	}
	return &diskv1beta2.ListDiskLocationsResponse{DiskLocations: out}, nil
}

func (x serverV1beta2) PartitionDisk(ctx context.Context, r *diskv1beta2.PartitionDiskRequest) (*diskv1beta2.PartitionDiskResponse, error) {
	n, err := parseDiskID("diskID", r.GetDiskID())
	if err != nil {
		return nil, err
	}
	if err := x.s.host.PartitionDisk(ctx, n); err != nil {
		return nil, err
	}
	return &diskv1beta2.PartitionDiskResponse{}, nil
}

func (x serverV1beta2) Rescan(ctx context.Context, _ *diskv1beta2.RescanRequest) (*diskv1beta2.RescanResponse, error) {
	if err := x.s.host.Rescan(ctx); err != nil {
		return nil, err
	}
	return &diskv1beta2.RescanResponse{}, nil
}

func (x serverV1beta2) ListDiskIDs(ctx context.Context, _ *diskv1beta2.ListDiskIDsRequest) (*diskv1beta2.ListDiskIDsResponse, error) {
	ids, err := x.s.host.ListDiskIDs(ctx)
	if err != nil {
		return nil, err
	}
	out := make(map[string]*diskv1beta2.DiskIDs, len(ids))
	for n, id := range ids {
		out[diskKey(n)] = &diskv1beta2.DiskIDs{Identifiers: map[string]string{idPage83: id.Page83, idSerialNumber: id.SerialNumber}}
	}
	return &diskv1beta2.ListDiskIDsResponse{DiskIDs: out}, nil
}

func (x serverV1beta2) DiskStats(ctx context.Context, r *diskv1beta2.DiskStatsRequest) (*diskv1beta2.DiskStatsResponse, error) {
	n, err := parseDiskID("diskID", r.GetDiskID())
	if err != nil {
		return nil, err
	}
	size, err := x.s.host.GetDiskStats(ctx, n)
	if err != nil {
		return nil, err
	}
	return &diskv1beta2.DiskStatsResponse{DiskSize: size}, nil
}

func (x serverV1beta2) SetAttachState(ctx context.Context, r *diskv1beta2.SetAttachStateRequest) (*diskv1beta2.SetAttachStateResponse, error) {
	n, err := parseDiskID("diskID", r.GetDiskID())
	if err != nil {
		return nil, err
	}
	if err := x.s.host.SetDiskState(ctx, n, r.GetIsOnline()); err != nil {
		return nil, err
	}
	return &diskv1beta2.SetAttachStateResponse{}, nil
}

func (x serverV1beta2) GetAttachState(ctx context.Context, r *diskv1beta2.GetAttachStateRequest) (*diskv1beta2.GetAttachStateResponse, error) {
	n, err := parseDiskID("diskID", r.GetDiskID())
	if err != nil {
		return nil, err
	}
	online, err := x.s.host.GetDiskState(ctx, n)
	if err != nil {
		return nil, err
	}
	return &diskv1beta2.GetAttachStateResponse{IsOnline: online}, nil
}
