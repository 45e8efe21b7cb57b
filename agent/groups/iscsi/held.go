package iscsi

import (
	"context"

	"github.com/go-logr/logr"

	"github.com/pipeguard/pipeguard/agent/groups/inflight"
)

// ConnectTarget and DisconnectTarget run one at a time per target (its
// IQN, whichever portal): Connect-IscsiTarget and Disconnect-IscsiTarget
// may go on in the iSCSI initiator after their worker is killed at the
// deadline. Neither has a post-condition the agent can read reliably (a
// connection may come and go with the network), so a change past its
// deadline holds its target for inflight.SettleTime. Portals, discovery
// and reads never hold a target.

// TrackOperations counts the refusals and releases of the iscsi group's
// held targets in m and logs the releases to log.
func (s *Server) TrackOperations(m *inflight.Metrics, log logr.Logger) *Server {
	s.ops = inflight.New(Group, m, log)
	return s
}

// held runs call, op of the target iqn, holding the target.
func (s *Server) held(ctx context.Context, iqn, op string, call func() error) error {
	return s.ops.Do(ctx, inflight.Target(iqn), op, nil, call)
}
