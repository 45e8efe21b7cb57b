package filesystem

import (
	"context"
	"errors"

	"github.com/pipeguard/pipeguard/agent/confine"
	hostfs "github.com/pipeguard/pipeguard/agent/hostops/filesystem"
	"github.com/pipeguard/pipeguard/agent/methods"
	"github.com/pipeguard/pipeguard/agent/server"
)

// Group is the API group name.
const Group = "filesystem"

// The path fields of each operation, with how far each is resolved through
// symlinks (package methods).
var (
	pathExistsPath    = methods.MustPath(Group, "PathExists", "path")
	mkdirPath         = methods.MustPath(Group, "Mkdir", "path")
	rmdirPath         = methods.MustPath(Group, "Rmdir", "path")
	rmdirContentsPath = methods.MustPath(Group, "RmdirContents", "path")
	symlinkSource     = methods.MustPath(Group, "CreateSymlink", "source_path")
	symlinkTarget     = methods.MustPath(Group, "CreateSymlink", "target_path")
	isSymlinkPath     = methods.MustPath(Group, "IsSymlink", "path")
)

// Server is the version-independent filesystem server.
type Server struct {
	host hostfs.API
	conf *confine.Confiner
}

// New returns a Server that confines paths with conf and runs operations on host.
func New(host hostfs.API, conf *confine.Confiner) (*Server, error) {
	if host == nil || conf == nil {
		return nil, errors.New("filesystem server needs host operations and a confiner")
	}
	return &Server{host: host, conf: conf}, nil
}

// Endpoints returns every served filesystem API version.
func (s *Server) Endpoints() []server.Endpoint {
	return []server.Endpoint{
		{Group: Group, Version: "v1alpha1", Register: s.registerV1alpha1},
		{Group: Group, Version: "v1beta1", Register: s.registerV1beta1},
		{Group: Group, Version: "v1beta2", Register: s.registerV1beta2},
		{Group: Group, Version: "v1", Register: s.registerV1},
		{Group: Group, Version: "v2alpha1", Register: s.registerV2alpha1},
	}
}

// PathExists reports whether path exists; a final symlink is not followed.
func (s *Server) PathExists(ctx context.Context, path string) (bool, error) {
	p, err := pathExistsPath.Check(s.conf, path)
	if err != nil {
		return false, err
	}
	return s.host.PathExists(ctx, p)
}

// Mkdir creates path and its parents.
func (s *Server) Mkdir(ctx context.Context, path string) error {
	p, err := mkdirPath.Check(s.conf, path)
	if err != nil {
		return err
	}
	return s.host.Mkdir(ctx, p)
}

// Rmdir removes the directory or link at path, with its contents if force.
// A link is removed, not followed.
func (s *Server) Rmdir(ctx context.Context, path string, force bool) error {
	p, err := rmdirPath.Check(s.conf, path)
	if err != nil {
		return err
	}
	return s.host.Rmdir(ctx, p, force)
}

// RmdirContents empties the directory at path; a link is followed, so its
// target must be confined too.
func (s *Server) RmdirContents(ctx context.Context, path string) error {
	p, err := rmdirContentsPath.Check(s.conf, path)
	if err != nil {
		return err
	}
	return s.host.RmdirContents(ctx, p)
}

// CreateSymlink creates target as a link to source. Both are confined: CSI
// Proxy checks the same, and a link out of the roots would be an escape for
// every later call.
func (s *Server) CreateSymlink(ctx context.Context, source, target string) error {
	src, err := symlinkSource.Check(s.conf, source)
	if err != nil {
		return err
	}
	tgt, err := symlinkTarget.Check(s.conf, target)
	if err != nil {
		return err
	}
	return s.host.CreateSymlink(ctx, src, tgt)
}

// IsSymlink reports whether path is a link whose target exists. CSI Proxy
// does not confine this call; pipeguard does, since its answer reveals
// whether the link target exists.
func (s *Server) IsSymlink(ctx context.Context, path string) (bool, error) {
	p, err := isSymlinkPath.Check(s.conf, path)
	if err != nil {
		return false, err
	}
	return s.host.IsSymlink(ctx, p)
}
