package iscsi

// Adapters for v1alpha1 and v1alpha2; v1alpha2 adds SetMutualChapSecret.

import (
	"context"

	"google.golang.org/grpc"

	iscsiv1alpha1 "github.com/kubernetes-csi/csi-proxy/client/api/iscsi/v1alpha1"
	iscsiv1alpha2 "github.com/kubernetes-csi/csi-proxy/client/api/iscsi/v1alpha2"
	hostiscsi "github.com/pipeguard/pipeguard/agent/hostops/iscsi"
)

// serverV1alpha1 adapts iscsi v1alpha1 to the internal server.
type serverV1alpha1 struct{ s *Server }

func (s *Server) registerV1alpha1(g *grpc.Server) {
	iscsiv1alpha1.RegisterIscsiServer(g, serverV1alpha1{s})
}

func portalV1alpha1(tp *iscsiv1alpha1.TargetPortal) (hostiscsi.Portal, error) {
	return portal(tp != nil, tp.GetTargetAddress(), tp.GetTargetPort())
}

func (x serverV1alpha1) AddTargetPortal(ctx context.Context, r *iscsiv1alpha1.AddTargetPortalRequest) (*iscsiv1alpha1.AddTargetPortalResponse, error) {
	p, err := portalV1alpha1(r.GetTargetPortal())
	if err != nil {
		return nil, err
	}
	if err := x.s.host.AddTargetPortal(ctx, p); err != nil {
		return nil, err
	}
	return &iscsiv1alpha1.AddTargetPortalResponse{}, nil
}

func (x serverV1alpha1) DiscoverTargetPortal(ctx context.Context, r *iscsiv1alpha1.DiscoverTargetPortalRequest) (*iscsiv1alpha1.DiscoverTargetPortalResponse, error) {
	p, err := portalV1alpha1(r.GetTargetPortal())
	if err != nil {
		return nil, err
	}
	iqns, err := x.s.host.DiscoverTargetPortal(ctx, p)
	if err != nil {
		return nil, err
	}
	return &iscsiv1alpha1.DiscoverTargetPortalResponse{Iqns: iqns}, nil
}

func (x serverV1alpha1) RemoveTargetPortal(ctx context.Context, r *iscsiv1alpha1.RemoveTargetPortalRequest) (*iscsiv1alpha1.RemoveTargetPortalResponse, error) {
	p, err := portalV1alpha1(r.GetTargetPortal())
	if err != nil {
		return nil, err
	}
	if err := x.s.host.RemoveTargetPortal(ctx, p); err != nil {
		return nil, err
	}
	return &iscsiv1alpha1.RemoveTargetPortalResponse{}, nil
}

func (x serverV1alpha1) ListTargetPortals(ctx context.Context, _ *iscsiv1alpha1.ListTargetPortalsRequest) (*iscsiv1alpha1.ListTargetPortalsResponse, error) {
	ps, err := x.s.host.ListTargetPortals(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]*iscsiv1alpha1.TargetPortal, 0, len(ps))
	for _, p := range ps {
		out = append(out, &iscsiv1alpha1.TargetPortal{TargetAddress: p.Address, TargetPort: p.Port})
	}
	return &iscsiv1alpha1.ListTargetPortalsResponse{TargetPortals: out}, nil
}

func (x serverV1alpha1) ConnectTarget(ctx context.Context, r *iscsiv1alpha1.ConnectTargetRequest) (*iscsiv1alpha1.ConnectTargetResponse, error) {
	p, err := portalV1alpha1(r.GetTargetPortal())
	if err != nil {
		return nil, err
	}
	if err := x.s.connect(ctx, p, r.GetIqn(), hostiscsi.AuthType(r.GetAuthType()), r.GetChapUsername(), r.GetChapSecret()); err != nil {
		return nil, err
	}
	return &iscsiv1alpha1.ConnectTargetResponse{}, nil
}

func (x serverV1alpha1) DisconnectTarget(ctx context.Context, r *iscsiv1alpha1.DisconnectTargetRequest) (*iscsiv1alpha1.DisconnectTargetResponse, error) {
	p, err := portalV1alpha1(r.GetTargetPortal())
	if err != nil {
		return nil, err
	}
	if err := x.s.disconnect(ctx, p, r.GetIqn()); err != nil {
		return nil, err
	}
	return &iscsiv1alpha1.DisconnectTargetResponse{}, nil
}

func (x serverV1alpha1) GetTargetDisks(ctx context.Context, r *iscsiv1alpha1.GetTargetDisksRequest) (*iscsiv1alpha1.GetTargetDisksResponse, error) {
	p, err := portalV1alpha1(r.GetTargetPortal())
	if err != nil {
		return nil, err
	}
	disks, err := x.s.targetDisks(ctx, p, r.GetIqn())
	if err != nil {
		return nil, err
	}
	return &iscsiv1alpha1.GetTargetDisksResponse{DiskIDs: disks}, nil
}

// serverV1alpha2 adapts iscsi v1alpha2 to the internal server.
type serverV1alpha2 struct{ s *Server }

func (s *Server) registerV1alpha2(g *grpc.Server) {
	iscsiv1alpha2.RegisterIscsiServer(g, serverV1alpha2{s})
}

func portalV1alpha2(tp *iscsiv1alpha2.TargetPortal) (hostiscsi.Portal, error) {
	return portal(tp != nil, tp.GetTargetAddress(), tp.GetTargetPort())
}

func (x serverV1alpha2) AddTargetPortal(ctx context.Context, r *iscsiv1alpha2.AddTargetPortalRequest) (*iscsiv1alpha2.AddTargetPortalResponse, error) {
	p, err := portalV1alpha2(r.GetTargetPortal())
	if err != nil {
		return nil, err
	}
	if err := x.s.host.AddTargetPortal(ctx, p); err != nil {
		return nil, err
	}
	return &iscsiv1alpha2.AddTargetPortalResponse{}, nil
}

func (x serverV1alpha2) DiscoverTargetPortal(ctx context.Context, r *iscsiv1alpha2.DiscoverTargetPortalRequest) (*iscsiv1alpha2.DiscoverTargetPortalResponse, error) {
	p, err := portalV1alpha2(r.GetTargetPortal())
	if err != nil {
		return nil, err
	}
	iqns, err := x.s.host.DiscoverTargetPortal(ctx, p)
	if err != nil {
		return nil, err
	}
	return &iscsiv1alpha2.DiscoverTargetPortalResponse{Iqns: iqns}, nil
}

func (x serverV1alpha2) RemoveTargetPortal(ctx context.Context, r *iscsiv1alpha2.RemoveTargetPortalRequest) (*iscsiv1alpha2.RemoveTargetPortalResponse, error) {
	p, err := portalV1alpha2(r.GetTargetPortal())
	if err != nil {
		return nil, err
	}
	if err := x.s.host.RemoveTargetPortal(ctx, p); err != nil {
		return nil, err
	}
	return &iscsiv1alpha2.RemoveTargetPortalResponse{}, nil
}

func (x serverV1alpha2) ListTargetPortals(ctx context.Context, _ *iscsiv1alpha2.ListTargetPortalsRequest) (*iscsiv1alpha2.ListTargetPortalsResponse, error) {
	ps, err := x.s.host.ListTargetPortals(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]*iscsiv1alpha2.TargetPortal, 0, len(ps))
	for _, p := range ps {
		out = append(out, &iscsiv1alpha2.TargetPortal{TargetAddress: p.Address, TargetPort: p.Port})
	}
	return &iscsiv1alpha2.ListTargetPortalsResponse{TargetPortals: out}, nil
}

func (x serverV1alpha2) ConnectTarget(ctx context.Context, r *iscsiv1alpha2.ConnectTargetRequest) (*iscsiv1alpha2.ConnectTargetResponse, error) {
	p, err := portalV1alpha2(r.GetTargetPortal())
	if err != nil {
		return nil, err
	}
	if err := x.s.connect(ctx, p, r.GetIqn(), hostiscsi.AuthType(r.GetAuthType()), r.GetChapUsername(), r.GetChapSecret()); err != nil {
		return nil, err
	}
	return &iscsiv1alpha2.ConnectTargetResponse{}, nil
}

func (x serverV1alpha2) DisconnectTarget(ctx context.Context, r *iscsiv1alpha2.DisconnectTargetRequest) (*iscsiv1alpha2.DisconnectTargetResponse, error) {
	p, err := portalV1alpha2(r.GetTargetPortal())
	if err != nil {
		return nil, err
	}
	if err := x.s.disconnect(ctx, p, r.GetIqn()); err != nil {
		return nil, err
	}
	return &iscsiv1alpha2.DisconnectTargetResponse{}, nil
}

func (x serverV1alpha2) GetTargetDisks(ctx context.Context, r *iscsiv1alpha2.GetTargetDisksRequest) (*iscsiv1alpha2.GetTargetDisksResponse, error) {
	p, err := portalV1alpha2(r.GetTargetPortal())
	if err != nil {
		return nil, err
	}
	disks, err := x.s.targetDisks(ctx, p, r.GetIqn())
	if err != nil {
		return nil, err
	}
	return &iscsiv1alpha2.GetTargetDisksResponse{DiskIDs: disks}, nil
}

func (x serverV1alpha2) SetMutualChapSecret(ctx context.Context, r *iscsiv1alpha2.SetMutualChapSecretRequest) (*iscsiv1alpha2.SetMutualChapSecretResponse, error) {
	if err := x.s.setMutualChapSecret(ctx, r.GetMutualChapSecret()); err != nil {
		return nil, err
	}
	return &iscsiv1alpha2.SetMutualChapSecretResponse{}, nil
}
