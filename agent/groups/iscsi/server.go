package iscsi

import (
	"context"
	"errors"

	"github.com/go-logr/logr"

	"github.com/pipeguard/pipeguard/agent/apierr"
	"github.com/pipeguard/pipeguard/agent/groups/inflight"
	"github.com/pipeguard/pipeguard/agent/groups/validate"
	hostiscsi "github.com/pipeguard/pipeguard/agent/hostops/iscsi"
	"github.com/pipeguard/pipeguard/agent/server"
)

// Group is the API group name.
const Group = "iscsi"

// DefaultPort is the iSCSI port used when a request leaves it 0 (unset).
const DefaultPort = 3260

// Server is the version-independent iscsi server.
type Server struct {
	host hostiscsi.API
	// ops holds each target's connection change in progress (held.go).
	ops *inflight.Table
}

// New returns a Server.
func New(host hostiscsi.API) (*Server, error) {
	if host == nil {
		return nil, errors.New("iscsi server needs host operations")
	}
	return &Server{host: host, ops: inflight.New(Group, nil, logr.Discard())}, nil
}

// Endpoints returns every served iscsi API version.
func (s *Server) Endpoints() []server.Endpoint {
	return []server.Endpoint{
		{Group: Group, Version: "v1alpha1", Register: s.registerV1alpha1},
		{Group: Group, Version: "v1alpha2", Register: s.registerV1alpha2},
	}
}

// portal validates a target portal; a missing portal is invalid.
func portal(present bool, address string, port uint32) (hostiscsi.Portal, error) {
	if !present {
		return hostiscsi.Portal{}, apierr.Invalidf("target_portal", "is missing: give the portal's target_address and target_port")
	}
	if err := validate.Host("target_portal.target_address", address); err != nil {
		return hostiscsi.Portal{}, err
	}
	if port == 0 {
		port = DefaultPort
	}
	if port > 65535 {
		return hostiscsi.Portal{}, apierr.Invalidf("target_portal.target_port", "is %d, not a TCP port", port)
	}
	return hostiscsi.Portal{Address: address, Port: port}, nil
}

// connect validates and runs ConnectTarget.
func (s *Server) connect(ctx context.Context, p hostiscsi.Portal, iqn string, auth hostiscsi.AuthType, user, secret string) error {
	if err := validate.IQN("iqn", iqn); err != nil {
		return err
	}
	switch auth {
	case hostiscsi.AuthNone:
		if user != "" || secret != "" {
			return apierr.Invalidf("auth_type", "is NONE but CHAP credentials were sent: set ONE_WAY_CHAP or MUTUAL_CHAP, or drop them")
		}
	case hostiscsi.AuthOneWayCHAP, hostiscsi.AuthMutualCHAP:
		if err := validate.Text("chap_username", user, 223, true); err != nil {
			return err
		}
		if err := validate.Text("chap_secret", secret, 256, true); err != nil {
			return err
		}
	default:
		return apierr.Invalidf("auth_type", "is %d, not NONE, ONE_WAY_CHAP or MUTUAL_CHAP", auth)
	}
	return s.held(ctx, iqn, "ConnectTarget", func() error { return s.host.ConnectTarget(ctx, p, iqn, auth, user, secret) })
}

func (s *Server) disconnect(ctx context.Context, p hostiscsi.Portal, iqn string) error {
	if err := validate.IQN("iqn", iqn); err != nil {
		return err
	}
	return s.held(ctx, iqn, "DisconnectTarget", func() error { return s.host.DisconnectTarget(ctx, p, iqn) })
}

func (s *Server) targetDisks(ctx context.Context, p hostiscsi.Portal, iqn string) ([]string, error) {
	if err := validate.IQN("iqn", iqn); err != nil {
		return nil, err
	}
	return s.host.GetTargetDisks(ctx, p, iqn)
}

func (s *Server) setMutualChapSecret(ctx context.Context, secret string) error {
	if err := validate.Text("MutualChapSecret", secret, 256, true); err != nil {
		return err
	}
	return s.host.SetMutualChapSecret(ctx, secret)
}
