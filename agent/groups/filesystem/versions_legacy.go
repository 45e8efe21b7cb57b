package filesystem

// Adapters for v1alpha1 and v1beta1, which name the link calls LinkPath and
// IsMountPoint and carry a path context that CSI Proxy ignores too.

import (
	"context"

	"google.golang.org/grpc"

	fsv1alpha1 "github.com/kubernetes-csi/csi-proxy/client/api/filesystem/v1alpha1"
	fsv1beta1 "github.com/kubernetes-csi/csi-proxy/client/api/filesystem/v1beta1"
)

// serverV1alpha1 adapts filesystem v1alpha1 to the internal server.
type serverV1alpha1 struct{ s *Server }

func (s *Server) registerV1alpha1(g *grpc.Server) {
	fsv1alpha1.RegisterFilesystemServer(g, serverV1alpha1{s})
}

func (a serverV1alpha1) PathExists(ctx context.Context, r *fsv1alpha1.PathExistsRequest) (*fsv1alpha1.PathExistsResponse, error) {
	ok, err := a.s.PathExists(ctx, r.GetPath())
	if err != nil {
		return nil, err
	}
	return &fsv1alpha1.PathExistsResponse{Exists: ok}, nil
}

func (a serverV1alpha1) Mkdir(ctx context.Context, r *fsv1alpha1.MkdirRequest) (*fsv1alpha1.MkdirResponse, error) {
	if err := a.s.Mkdir(ctx, r.GetPath()); err != nil {
		return nil, err
	}
	return &fsv1alpha1.MkdirResponse{}, nil
}

func (a serverV1alpha1) Rmdir(ctx context.Context, r *fsv1alpha1.RmdirRequest) (*fsv1alpha1.RmdirResponse, error) {
	if err := a.s.Rmdir(ctx, r.GetPath(), r.GetForce()); err != nil {
		return nil, err
	}
	return &fsv1alpha1.RmdirResponse{}, nil
}

// LinkPath is the old name of CreateSymlink.
func (a serverV1alpha1) LinkPath(ctx context.Context, r *fsv1alpha1.LinkPathRequest) (*fsv1alpha1.LinkPathResponse, error) {
	if err := a.s.CreateSymlink(ctx, r.GetSourcePath(), r.GetTargetPath()); err != nil {
		return nil, err
	}
	return &fsv1alpha1.LinkPathResponse{}, nil
}

// IsMountPoint is the old name of IsSymlink.
func (a serverV1alpha1) IsMountPoint(ctx context.Context, r *fsv1alpha1.IsMountPointRequest) (*fsv1alpha1.IsMountPointResponse, error) {
	ok, err := a.s.IsSymlink(ctx, r.GetPath())
	if err != nil {
		return nil, err
	}
	return &fsv1alpha1.IsMountPointResponse{IsMountPoint: ok}, nil
}

// serverV1beta1 adapts filesystem v1beta1 to the internal server.
type serverV1beta1 struct{ s *Server }

func (s *Server) registerV1beta1(g *grpc.Server) {
	fsv1beta1.RegisterFilesystemServer(g, serverV1beta1{s})
}

func (a serverV1beta1) PathExists(ctx context.Context, r *fsv1beta1.PathExistsRequest) (*fsv1beta1.PathExistsResponse, error) {
	ok, err := a.s.PathExists(ctx, r.GetPath())
	if err != nil {
		return nil, err
	}
	return &fsv1beta1.PathExistsResponse{Exists: ok}, nil
}

func (a serverV1beta1) Mkdir(ctx context.Context, r *fsv1beta1.MkdirRequest) (*fsv1beta1.MkdirResponse, error) {
	if err := a.s.Mkdir(ctx, r.GetPath()); err != nil {
		return nil, err
	}
	return &fsv1beta1.MkdirResponse{}, nil
}

func (a serverV1beta1) Rmdir(ctx context.Context, r *fsv1beta1.RmdirRequest) (*fsv1beta1.RmdirResponse, error) {
	if err := a.s.Rmdir(ctx, r.GetPath(), r.GetForce()); err != nil {
		return nil, err
	}
	return &fsv1beta1.RmdirResponse{}, nil
}

// LinkPath is the old name of CreateSymlink.
func (a serverV1beta1) LinkPath(ctx context.Context, r *fsv1beta1.LinkPathRequest) (*fsv1beta1.LinkPathResponse, error) {
	if err := a.s.CreateSymlink(ctx, r.GetSourcePath(), r.GetTargetPath()); err != nil {
		return nil, err
	}
	return &fsv1beta1.LinkPathResponse{}, nil
}

// IsMountPoint is the old name of IsSymlink.
func (a serverV1beta1) IsMountPoint(ctx context.Context, r *fsv1beta1.IsMountPointRequest) (*fsv1beta1.IsMountPointResponse, error) {
	ok, err := a.s.IsSymlink(ctx, r.GetPath())
	if err != nil {
		return nil, err
	}
	return &fsv1beta1.IsMountPointResponse{IsMountPoint: ok}, nil
}
