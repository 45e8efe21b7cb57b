package filesystem

// Adapters for v1beta2, v1 and v2alpha1, which name the link calls CreateSymlink and IsSymlink.

import (
	"context"

	"google.golang.org/grpc"

	fsv1 "github.com/kubernetes-csi/csi-proxy/client/api/filesystem/v1"
	fsv1beta2 "github.com/kubernetes-csi/csi-proxy/client/api/filesystem/v1beta2"
	fsv2alpha1 "github.com/kubernetes-csi/csi-proxy/client/api/filesystem/v2alpha1"
)

// serverV1beta2 adapts filesystem v1beta2 to the internal server.
type serverV1beta2 struct{ s *Server }

func (s *Server) registerV1beta2(g *grpc.Server) {
	fsv1beta2.RegisterFilesystemServer(g, serverV1beta2{s})
}

func (a serverV1beta2) PathExists(ctx context.Context, r *fsv1beta2.PathExistsRequest) (*fsv1beta2.PathExistsResponse, error) {
	ok, err := a.s.PathExists(ctx, r.GetPath())
	if err != nil {
		return nil, err
	}
	return &fsv1beta2.PathExistsResponse{Exists: ok}, nil
}

func (a serverV1beta2) Mkdir(ctx context.Context, r *fsv1beta2.MkdirRequest) (*fsv1beta2.MkdirResponse, error) {
	if err := a.s.Mkdir(ctx, r.GetPath()); err != nil {
		return nil, err
	}
	return &fsv1beta2.MkdirResponse{}, nil
}

func (a serverV1beta2) Rmdir(ctx context.Context, r *fsv1beta2.RmdirRequest) (*fsv1beta2.RmdirResponse, error) {
	if err := a.s.Rmdir(ctx, r.GetPath(), r.GetForce()); err != nil {
		return nil, err
	}
	return &fsv1beta2.RmdirResponse{}, nil
}

func (a serverV1beta2) CreateSymlink(ctx context.Context, r *fsv1beta2.CreateSymlinkRequest) (*fsv1beta2.CreateSymlinkResponse, error) {
	if err := a.s.CreateSymlink(ctx, r.GetSourcePath(), r.GetTargetPath()); err != nil {
		return nil, err
	}
	return &fsv1beta2.CreateSymlinkResponse{}, nil
}

func (a serverV1beta2) IsSymlink(ctx context.Context, r *fsv1beta2.IsSymlinkRequest) (*fsv1beta2.IsSymlinkResponse, error) {
	ok, err := a.s.IsSymlink(ctx, r.GetPath())
	if err != nil {
		return nil, err
	}
	return &fsv1beta2.IsSymlinkResponse{IsSymlink: ok}, nil
}

// serverV1 adapts filesystem v1 to the internal server.
type serverV1 struct{ s *Server }

func (s *Server) registerV1(g *grpc.Server) { fsv1.RegisterFilesystemServer(g, serverV1{s}) }

func (a serverV1) PathExists(ctx context.Context, r *fsv1.PathExistsRequest) (*fsv1.PathExistsResponse, error) {
	ok, err := a.s.PathExists(ctx, r.GetPath())
	if err != nil {
		return nil, err
	}
	return &fsv1.PathExistsResponse{Exists: ok}, nil
}

func (a serverV1) Mkdir(ctx context.Context, r *fsv1.MkdirRequest) (*fsv1.MkdirResponse, error) {
	if err := a.s.Mkdir(ctx, r.GetPath()); err != nil {
		return nil, err
	}
	return &fsv1.MkdirResponse{}, nil
}

func (a serverV1) Rmdir(ctx context.Context, r *fsv1.RmdirRequest) (*fsv1.RmdirResponse, error) {
	if err := a.s.Rmdir(ctx, r.GetPath(), r.GetForce()); err != nil {
		return nil, err
	}
	return &fsv1.RmdirResponse{}, nil
}

func (a serverV1) CreateSymlink(ctx context.Context, r *fsv1.CreateSymlinkRequest) (*fsv1.CreateSymlinkResponse, error) {
	if err := a.s.CreateSymlink(ctx, r.GetSourcePath(), r.GetTargetPath()); err != nil {
		return nil, err
	}
	return &fsv1.CreateSymlinkResponse{}, nil
}

func (a serverV1) IsSymlink(ctx context.Context, r *fsv1.IsSymlinkRequest) (*fsv1.IsSymlinkResponse, error) {
	ok, err := a.s.IsSymlink(ctx, r.GetPath())
	if err != nil {
		return nil, err
	}
	return &fsv1.IsSymlinkResponse{IsSymlink: ok}, nil
}

// serverV2alpha1 adapts filesystem v2alpha1 to the internal server.
type serverV2alpha1 struct{ s *Server }

func (s *Server) registerV2alpha1(g *grpc.Server) {
	fsv2alpha1.RegisterFilesystemServer(g, serverV2alpha1{s})
}

func (a serverV2alpha1) PathExists(ctx context.Context, r *fsv2alpha1.PathExistsRequest) (*fsv2alpha1.PathExistsResponse, error) {
	ok, err := a.s.PathExists(ctx, r.GetPath())
	if err != nil {
		return nil, err
	}
	return &fsv2alpha1.PathExistsResponse{Exists: ok}, nil
}

func (a serverV2alpha1) Mkdir(ctx context.Context, r *fsv2alpha1.MkdirRequest) (*fsv2alpha1.MkdirResponse, error) {
	if err := a.s.Mkdir(ctx, r.GetPath()); err != nil {
		return nil, err
	}
	return &fsv2alpha1.MkdirResponse{}, nil
}

func (a serverV2alpha1) Rmdir(ctx context.Context, r *fsv2alpha1.RmdirRequest) (*fsv2alpha1.RmdirResponse, error) {
	if err := a.s.Rmdir(ctx, r.GetPath(), r.GetForce()); err != nil {
		return nil, err
	}
	return &fsv2alpha1.RmdirResponse{}, nil
}

func (a serverV2alpha1) CreateSymlink(ctx context.Context, r *fsv2alpha1.CreateSymlinkRequest) (*fsv2alpha1.CreateSymlinkResponse, error) {
	if err := a.s.CreateSymlink(ctx, r.GetSourcePath(), r.GetTargetPath()); err != nil {
		return nil, err
	}
	return &fsv2alpha1.CreateSymlinkResponse{}, nil
}

func (a serverV2alpha1) IsSymlink(ctx context.Context, r *fsv2alpha1.IsSymlinkRequest) (*fsv2alpha1.IsSymlinkResponse, error) {
	ok, err := a.s.IsSymlink(ctx, r.GetPath())
	if err != nil {
		return nil, err
	}
	return &fsv2alpha1.IsSymlinkResponse{IsSymlink: ok}, nil
}

func (a serverV2alpha1) RmdirContents(ctx context.Context, r *fsv2alpha1.RmdirContentsRequest) (*fsv2alpha1.RmdirContentsResponse, error) {
	if err := a.s.RmdirContents(ctx, r.GetPath()); err != nil {
		return nil, err
	}
	return &fsv2alpha1.RmdirContentsResponse{}, nil
}
