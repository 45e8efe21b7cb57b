package iscsi

import (
	"context"
)

// Portal is an iSCSI target portal.
type Portal struct {
	Address string
	Port    uint32
}

// AuthType is the CHAP mode of a connection.
type AuthType int

// The CHAP modes, numbered as in the CSI Proxy API.
const (
	AuthNone AuthType = iota
	AuthOneWayCHAP
	AuthMutualCHAP
)

// cmdletName is the value MSFT_iSCSITarget.Connect takes for
// AuthenticationType, as Connect-IscsiTarget takes it.
func (a AuthType) cmdletName() string {
	switch a {
	case AuthOneWayCHAP:
		return "ONEWAYCHAP"
	case AuthMutualCHAP:
		return "MUTUALCHAP"
	}
	return "NONE"
}

// API is the iscsi host operations. Inputs have been validated by the caller.
type API interface {
	AddTargetPortal(ctx context.Context, p Portal) error
	DiscoverTargetPortal(ctx context.Context, p Portal) ([]string, error)
	RemoveTargetPortal(ctx context.Context, p Portal) error
	ListTargetPortals(ctx context.Context) ([]Portal, error)
	ConnectTarget(ctx context.Context, p Portal, iqn string, auth AuthType, chapUser, chapSecret string) error
	DisconnectTarget(ctx context.Context, p Portal, iqn string) error
	GetTargetDisks(ctx context.Context, p Portal, iqn string) ([]string, error)
	SetMutualChapSecret(ctx context.Context, secret string) error
}
