package smb

// Adapters for every smb version; their requests have the same fields. The
// error field of the v1alpha1 and v1beta1 responses stays empty: failures
// are gRPC errors, as with CSI Proxy.

import (
	"context"

	"google.golang.org/grpc"

	smbv1 "github.com/kubernetes-csi/csi-proxy/client/api/smb/v1"
	smbv1alpha1 "github.com/kubernetes-csi/csi-proxy/client/api/smb/v1alpha1"
	smbv1beta1 "github.com/kubernetes-csi/csi-proxy/client/api/smb/v1beta1"
	smbv1beta2 "github.com/kubernetes-csi/csi-proxy/client/api/smb/v1beta2"
)

// serverV1alpha1 adapts smb v1alpha1 to the internal server.
type serverV1alpha1 struct{ s *Server }

func (s *Server) registerV1alpha1(g *grpc.Server) {
	smbv1alpha1.RegisterSmbServer(g, serverV1alpha1{s})
}

func (a serverV1alpha1) NewSmbGlobalMapping(ctx context.Context, r *smbv1alpha1.NewSmbGlobalMappingRequest) (*smbv1alpha1.NewSmbGlobalMappingResponse, error) {
	if err := a.s.NewSmbGlobalMapping(ctx, r.GetRemotePath(), r.GetLocalPath(), r.GetUsername(), r.GetPassword()); err != nil {
		return nil, err
	}
	return &smbv1alpha1.NewSmbGlobalMappingResponse{}, nil
}

func (a serverV1alpha1) RemoveSmbGlobalMapping(ctx context.Context, r *smbv1alpha1.RemoveSmbGlobalMappingRequest) (*smbv1alpha1.RemoveSmbGlobalMappingResponse, error) {
	if err := a.s.RemoveSmbGlobalMapping(ctx, r.GetRemotePath()); err != nil {
		return nil, err
	}
	return &smbv1alpha1.RemoveSmbGlobalMappingResponse{}, nil
}

// serverV1beta1 adapts smb v1beta1 to the internal server.
type serverV1beta1 struct{ s *Server }

func (s *Server) registerV1beta1(g *grpc.Server) { smbv1beta1.RegisterSmbServer(g, serverV1beta1{s}) }

func (a serverV1beta1) NewSmbGlobalMapping(ctx context.Context, r *smbv1beta1.NewSmbGlobalMappingRequest) (*smbv1beta1.NewSmbGlobalMappingResponse, error) {
	if err := a.s.NewSmbGlobalMapping(ctx, r.GetRemotePath(), r.GetLocalPath(), r.GetUsername(), r.GetPassword()); err != nil {
		return nil, err
	}
	return &smbv1beta1.NewSmbGlobalMappingResponse{}, nil
}

func (a serverV1beta1) RemoveSmbGlobalMapping(ctx context.Context, r *smbv1beta1.RemoveSmbGlobalMappingRequest) (*smbv1beta1.RemoveSmbGlobalMappingResponse, error) {
	if err := a.s.RemoveSmbGlobalMapping(ctx, r.GetRemotePath()); err != nil {
		return nil, err
	}
	return &smbv1beta1.RemoveSmbGlobalMappingResponse{}, nil
}

// serverV1beta2 adapts smb v1beta2 to the internal server.
type serverV1beta2 struct{ s *Server }

func (s *Server) registerV1beta2(g *grpc.Server) { smbv1beta2.RegisterSmbServer(g, serverV1beta2{s}) }

func (a serverV1beta2) NewSmbGlobalMapping(ctx context.Context, r *smbv1beta2.NewSmbGlobalMappingRequest) (*smbv1beta2.NewSmbGlobalMappingResponse, error) {
	if err := a.s.NewSmbGlobalMapping(ctx, r.GetRemotePath(), r.GetLocalPath(), r.GetUsername(), r.GetPassword()); err != nil {
		return nil, err
	}
	return &smbv1beta2.NewSmbGlobalMappingResponse{}, nil
}

func (a serverV1beta2) RemoveSmbGlobalMapping(ctx context.Context, r *smbv1beta2.RemoveSmbGlobalMappingRequest) (*smbv1beta2.RemoveSmbGlobalMappingResponse, error) {
	if err := a.s.RemoveSmbGlobalMapping(ctx, r.GetRemotePath()); err != nil {
		return nil, err
	}
	return &smbv1beta2.RemoveSmbGlobalMappingResponse{}, nil
}

// serverV1 adapts smb v1 to the internal server.
type serverV1 struct{ s *Server }

func (s *Server) registerV1(g *grpc.Server) { smbv1.RegisterSmbServer(g, serverV1{s}) }

func (a serverV1) NewSmbGlobalMapping(ctx context.Context, r *smbv1.NewSmbGlobalMappingRequest) (*smbv1.NewSmbGlobalMappingResponse, error) {
	if err := a.s.NewSmbGlobalMapping(ctx, r.GetRemotePath(), r.GetLocalPath(), r.GetUsername(), r.GetPassword()); err != nil {
		return nil, err
	}
	return &smbv1.NewSmbGlobalMappingResponse{}, nil
}

func (a serverV1) RemoveSmbGlobalMapping(ctx context.Context, r *smbv1.RemoveSmbGlobalMappingRequest) (*smbv1.RemoveSmbGlobalMappingResponse, error) {
	if err := a.s.RemoveSmbGlobalMapping(ctx, r.GetRemotePath()); err != nil {
		return nil, err
	}
	return &smbv1.RemoveSmbGlobalMappingResponse{}, nil
}
