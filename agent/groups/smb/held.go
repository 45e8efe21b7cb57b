package smb

import (
	"context"
	"fmt"

	"github.com/go-logr/logr"

	"github.com/pipeguard/pipeguard/agent/groups/inflight"
)

// A share's lock (locks.go) makes a second mapping change of the share
// wait while the first runs. When the first ends by its deadline the lock
// is released, but New-SmbGlobalMapping or Remove-SmbGlobalMapping may go
// on in the SMB client after its worker is killed: the share then stays
// held, and the next change of it, once it has the lock, is refused until
// the settle check says the provider is done: for NewSmbGlobalMapping the
// share's mapping exists and answers (IsMapped), for
// RemoveSmbGlobalMapping it is gone.

// TrackOperations counts the refusals and releases of the smb group's
// held shares in m and logs the releases to log.
func (s *Server) TrackOperations(m *inflight.Metrics, log logr.Logger) *Server {
	s.ops = inflight.New(Group, m, log)
	return s
}

// held runs call, method of the share root, with root's lock held: refused
// while an earlier change of root may still run; check settles it if call
// ends by its deadline. ctx is the request's, which withDeadline made.
func (s *Server) held(parent, ctx context.Context, method, root string, check inflight.Check, call func() error) error {
	return s.ops.Do(ctx, inflight.Share(root), method, check, func() error {
		return s.ended(parent, ctx, method, root, call())
	})
}

// mapped is the settle check of a change that maps root (want true) or
// removes its mapping (want false).
func (s *Server) mapped(root string, want bool) inflight.Check {
	return func(ctx context.Context) (bool, error) {
		got, err := s.host.IsMapped(ctx, root)
		if err != nil {
			return false, fmt.Errorf("reading the global mapping of %s: %w", root, err)
		}
		return got == want, nil
	}
}
