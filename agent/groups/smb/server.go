package smb

import (
	"context"
	"errors"
	"time"

	"github.com/go-logr/logr"

	"github.com/pipeguard/pipeguard/agent/confine"
	"github.com/pipeguard/pipeguard/agent/groups/inflight"
	"github.com/pipeguard/pipeguard/agent/groups/validate"
	hostsmb "github.com/pipeguard/pipeguard/agent/hostops/smb"
	"github.com/pipeguard/pipeguard/agent/methods"
	"github.com/pipeguard/pipeguard/agent/server"
)

// Group is the API group name.
const Group = "smb"

// mappingLocalPath is the path field of NewSmbGlobalMapping (package methods).
var mappingLocalPath = methods.MustPath(Group, "NewSmbGlobalMapping", "local_path")

// Server is the version-independent smb server.
type Server struct {
	host           hostsmb.API
	conf           *confine.Confiner
	requirePrivacy bool
	locks          shareLocks
	// ops holds a share whose mapping change ended by its deadline while
	// the provider may still be working (held.go).
	ops *inflight.Table
	// deadline covers a whole request; setting names what sets it.
	deadline time.Duration
	setting  string
}

// New returns a Server.
func New(host hostsmb.API, conf *confine.Confiner, requirePrivacy bool) (*Server, error) {
	if host == nil || conf == nil {
		return nil, errors.New("smb server needs host operations and a confiner")
	}
	return &Server{host: host, conf: conf, requirePrivacy: requirePrivacy, ops: inflight.New(Group, nil, logr.Discard())}, nil
}

// Endpoints returns every served smb API version.
func (s *Server) Endpoints() []server.Endpoint {
	return []server.Endpoint{
		{Group: Group, Version: "v1alpha1", Register: s.registerV1alpha1},
		{Group: Group, Version: "v1beta1", Register: s.registerV1beta1},
		{Group: Group, Version: "v1beta2", Register: s.registerV1beta2},
		{Group: Group, Version: "v1", Register: s.registerV1},
	}
}

// NewSmbGlobalMapping maps the share of remotePath for the host, unless a
// working mapping exists, and links localPath to remotePath when given.
func (s *Server) NewSmbGlobalMapping(parent context.Context, remotePath, localPath, username, password string) error {
	ctx, cancel := s.withDeadline(parent)
	defer cancel()
	remote, root, err := validate.UNC("remote_path", remotePath)
	if err != nil {
		return err
	}
	if localPath != "" {
		// Refused before anything runs, and resolved again just before the
		// link is made: mapping the share can take long.
		if _, err := s.finalLocalPath(ctx, localPath); err != nil {
			return err
		}
	}
	if err := validate.Text("username", username, 256, false); err != nil {
		return err
	}
	if err := validate.Text("password", password, 1024, false); err != nil {
		return err
	}

	unlock, err := s.lockShare(parent, ctx, "NewSmbGlobalMapping", root)
	if err != nil {
		return err
	}
	defer unlock()
	return s.held(parent, ctx, "NewSmbGlobalMapping", root, s.mapped(root, true), func() error {
		return s.mapAndLink(ctx, remote, root, localPath, username, password)
	})
}

// mapAndLink makes the mapping of root unless one works, and the link,
// with root's lock held.
func (s *Server) mapAndLink(ctx context.Context, remote, root, localPath, username, password string) error {
	log := logr.FromContextOrDiscard(ctx)
	mapped, err := s.host.IsMapped(ctx, root)
	if err != nil {
		log.V(1).Info("cannot tell whether the share is mapped; mapping it", "remotePath", root, "error", err.Error())
		mapped = false
	}
	if mapped {
		// A mapping whose credentials went stale answers nothing: replace
		// it. Like CSI Proxy, probe the share root, which is what is mapped
		// and shared by every volume of the share: the caller's directory
		// may not exist yet, and must not tear down a working mapping.
		if valid, err := s.host.PathValid(ctx, root); err != nil || !valid {
			log.Info("replacing a global mapping that does not answer", "remotePath", root)
			if err := s.host.RemoveGlobalMapping(ctx, root); err != nil {
				return err
			}
			mapped = false
		}
	}
	if !mapped {
		if err := s.host.NewGlobalMapping(ctx, root, username, password, s.requirePrivacy); err != nil {
			return err
		}
	}
	if localPath != "" {
		local, err := s.finalLocalPath(ctx, localPath)
		if err != nil {
			return err
		}
		return s.host.NewLink(ctx, remote, local)
	}
	return nil
}

// RemoveSmbGlobalMapping removes the global mapping of remotePath's share.
func (s *Server) RemoveSmbGlobalMapping(parent context.Context, remotePath string) error {
	ctx, cancel := s.withDeadline(parent)
	defer cancel()
	_, root, err := validate.UNC("remote_path", remotePath)
	if err != nil {
		return err
	}
	unlock, err := s.lockShare(parent, ctx, "RemoveSmbGlobalMapping", root)
	if err != nil {
		return err
	}
	defer unlock()
	return s.held(parent, ctx, "RemoveSmbGlobalMapping", root, s.mapped(root, false), func() error {
		return s.host.RemoveGlobalMapping(ctx, root)
	})
}
