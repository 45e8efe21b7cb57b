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

// New returns a Server that confines paths with conf and runs operations on
// host. Host operations that work through handles on the allowed roots
// (hostfs.Rooted, such as hostfs.Local) are bound to the roots of conf.
func New(host hostfs.API, conf *confine.Confiner) (*Server, error) {
	if host == nil || conf == nil {
		return nil, errors.New("filesystem server needs host operations and a confiner")
	}
	if r, ok := host.(hostfs.Rooted); ok {
		host = r.WithRoots(conf)
	}
	return &Server{host: host, conf: conf}, nil
}

// checkWrite confines path like Check and refuses an allowed root itself:
// op creates or destroys, and may act only on paths inside a root.
func checkWrite(f methods.Field, conf *confine.Confiner, path, op string) (string, error) {
	p, err := f.Check(conf, path)
	if err != nil {
		return "", err
	}
	if err := conf.RefuseRoot(f.Name, path, op); err != nil {
		return "", err
	}
	return p, nil
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
	ok, err := s.host.PathExists(ctx, p)
	return ok, confine.Named(pathExistsPath.Name, err)
}

// Mkdir creates path and its parents.
func (s *Server) Mkdir(ctx context.Context, path string) error {
	p, err := checkWrite(mkdirPath, s.conf, path, "Mkdir")
	if err != nil {
		return err
	}
	return confine.Named(mkdirPath.Name, s.host.Mkdir(ctx, p))
}

// Rmdir removes the directory or link at path, with its contents if force.
// A link is removed, not followed.
func (s *Server) Rmdir(ctx context.Context, path string, force bool) error {
	p, err := checkWrite(rmdirPath, s.conf, path, "Rmdir")
	if err != nil {
		return err
	}
	return confine.Named(rmdirPath.Name, s.host.Rmdir(ctx, p, force))
}

// RmdirContents empties the directory at path; a link is followed, so its
// target must be confined too.
func (s *Server) RmdirContents(ctx context.Context, path string) error {
	p, err := checkWrite(rmdirContentsPath, s.conf, path, "RmdirContents")
	if err != nil {
		return err
	}
	return confine.Named(rmdirContentsPath.Name, s.host.RmdirContents(ctx, p))
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
	// Neither the new link nor what it points to may be a root: a link to a
	// root would hand the whole root to whoever mounts the link.
	if err := s.conf.RefuseRoot(symlinkTarget.Name, target, "CreateSymlink"); err != nil {
		return err
	}
	if err := s.conf.RefuseRoot(symlinkSource.Name, source, "CreateSymlink"); err != nil {
		return err
	}
	// Where the link may go depends on the caller's pod (rule pod-link),
	// which the host operations check on the resolved paths.
	return s.host.CreateSymlink(withCaller(ctx), src, tgt)
}

// withCaller adds to ctx whom the request is attributed to by its peer
// identity (confine.PeerCaller), for rule pod-link.
func withCaller(ctx context.Context) context.Context {
	return confine.WithCaller(ctx, confine.PeerCaller(ctx))
}

// IsSymlink reports whether path is a link whose target exists. CSI Proxy
// does not confine this call; pipeguard does, since its answer reveals
// whether the link target exists: a link leading out of the roots is
// refused, not answered.
func (s *Server) IsSymlink(ctx context.Context, path string) (bool, error) {
	p, err := isSymlinkPath.Check(s.conf, path)
	if err != nil {
		return false, err
	}
	ok, err := s.host.IsSymlink(ctx, p)
	return ok, confine.Named(isSymlinkPath.Name, err)
}
