package iscsi

import (
	"context"
	"strconv"

	"github.com/pipeguard/pipeguard/agent/hostops/runner"
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

// cmdletName is the value Connect-IscsiTarget takes for -AuthenticationType.
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

// The scripts. They are constants: request values are read from $Env:.
// They answer as CSI Proxy 1.3 does: adding a portal that exists, connecting
// a connected target and disconnecting one that is not connected change
// nothing and succeed; a target that is not connected has no disks; a
// connection is not made persistent, and a persistent session (one made by
// an older CSI Proxy) is unregistered before it is disconnected.
const (
	portalArgs = `-TargetPortalAddress $Env:iscsi_tp_address -TargetPortalPortNumber ([uint16]$Env:iscsi_tp_port)`
	scriptAdd  = `if (-not (Get-IscsiTargetPortal ` + portalArgs + ` -ErrorAction SilentlyContinue)) { ` +
		`New-IscsiTargetPortal ` + portalArgs + ` | Out-Null }`
	scriptDiscover = `Get-IscsiTargetPortal ` + portalArgs + ` | Get-IscsiTarget | Select-Object -ExpandProperty NodeAddress`
	scriptRemove   = `Get-IscsiTargetPortal ` + portalArgs + ` | Remove-IscsiTargetPortal -Confirm:$false`
	scriptList     = `Get-IscsiTargetPortal | Select-Object TargetPortalAddress, TargetPortalPortNumber | ConvertTo-Json -Compress`
	// targetOfPortal sets $t to the portal's target with the IQN, and
	// fails when the portal has none, as CSI Proxy's query of it does.
	targetOfPortal = `$t = Get-IscsiTargetPortal ` + portalArgs + ` | Get-IscsiTarget | Where-Object { $_.NodeAddress -eq $Env:iscsi_target_iqn } | Select-Object -First 1; ` +
		`if (-not $t) { throw 'the target portal has no target with that IQN' }; `
	scriptConnect = targetOfPortal + `if ($t.IsConnected) { return }; ` +
		`$params = @{ TargetPortalAddress = $Env:iscsi_tp_address; TargetPortalPortNumber = [uint16]$Env:iscsi_tp_port; ` +
		`NodeAddress = $Env:iscsi_target_iqn; AuthenticationType = $Env:iscsi_auth_type }; ` +
		`if ($Env:iscsi_auth_type -ne 'NONE') { $params.ChapUsername = $Env:iscsi_chap_user; $params.ChapSecret = $Env:iscsi_chap_secret }; ` +
		`Connect-IscsiTarget @params | Out-Null`
	scriptDisconnect = targetOfPortal + `if (-not $t.IsConnected) { return }; ` +
		`$s = Get-IscsiSession -IscsiTarget $t | Select-Object -First 1; ` +
		`if ($s.IsPersistent) { $s | Unregister-IscsiSession }; ` +
		`Disconnect-IscsiTarget -SessionIdentifier $s.SessionIdentifier -Confirm:$false`
	scriptDisks = targetOfPortal + `if (-not $t.IsConnected) { return }; ` +
		`Get-IscsiConnection -IscsiTarget $t | Get-Disk | Select-Object -ExpandProperty Number`
	scriptSetMutual = `Set-IscsiChapSecret -ChapSecret $Env:iscsi_mutual_chap_secret`
)

// PowerShell is API on Windows.
type PowerShell struct {
	Runner runner.Runner
}

var _ API = PowerShell{}

func portalEnv(pt Portal) []string {
	return []string{
		runner.Env("iscsi_tp_address", pt.Address),
		runner.Env("iscsi_tp_port", strconv.FormatUint(uint64(pt.Port), 10)),
	}
}

// AddTargetPortal runs New-IscsiTargetPortal, unless the portal exists.
func (p PowerShell) AddTargetPortal(ctx context.Context, pt Portal) error {
	_, err := runner.Script(ctx, p.Runner, "New-IscsiTargetPortal", scriptAdd, portalEnv(pt)...)
	return err
}

// DiscoverTargetPortal lists the IQNs of the portal's targets.
func (p PowerShell) DiscoverTargetPortal(ctx context.Context, pt Portal) ([]string, error) {
	out, err := runner.Script(ctx, p.Runner, "Get-IscsiTarget", scriptDiscover, portalEnv(pt)...)
	if err != nil {
		return nil, err
	}
	return runner.Lines(out), nil
}

// RemoveTargetPortal runs Remove-IscsiTargetPortal.
func (p PowerShell) RemoveTargetPortal(ctx context.Context, pt Portal) error {
	_, err := runner.Script(ctx, p.Runner, "Remove-IscsiTargetPortal", scriptRemove, portalEnv(pt)...)
	return err
}

// ListTargetPortals lists the configured portals.
func (p PowerShell) ListTargetPortals(ctx context.Context) ([]Portal, error) {
	out, err := runner.Script(ctx, p.Runner, "Get-IscsiTargetPortal", scriptList)
	if err != nil {
		return nil, err
	}
	list, err := runner.DecodeJSONList[struct {
		TargetPortalAddress    string
		TargetPortalPortNumber uint32
	}](out)
	if err != nil {
		return nil, err
	}
	portals := make([]Portal, 0, len(list))
	for _, l := range list {
		portals = append(portals, Portal{Address: l.TargetPortalAddress, Port: l.TargetPortalPortNumber})
	}
	return portals, nil
}

// ConnectTarget runs Connect-IscsiTarget, with CHAP when asked, unless the
// target is connected.
func (p PowerShell) ConnectTarget(ctx context.Context, pt Portal, iqn string, auth AuthType, chapUser, chapSecret string) error {
	env := append(portalEnv(pt),
		runner.Env("iscsi_target_iqn", iqn),
		runner.Env("iscsi_auth_type", auth.cmdletName()),
		runner.Env("iscsi_chap_user", chapUser),
		runner.Env("iscsi_chap_secret", chapSecret))
	_, err := runner.Script(ctx, p.Runner, "Connect-IscsiTarget", scriptConnect, env...)
	return err
}

// DisconnectTarget disconnects the portal's target with that IQN, if it is
// connected.
func (p PowerShell) DisconnectTarget(ctx context.Context, pt Portal, iqn string) error {
	_, err := runner.Script(ctx, p.Runner, "Disconnect-IscsiTarget", scriptDisconnect, append(portalEnv(pt), runner.Env("iscsi_target_iqn", iqn))...)
	return err
}

// GetTargetDisks returns the numbers of the disks of the target: none when
// it is not connected.
func (p PowerShell) GetTargetDisks(ctx context.Context, pt Portal, iqn string) ([]string, error) {
	out, err := runner.Script(ctx, p.Runner, "Get-IscsiConnection", scriptDisks, append(portalEnv(pt), runner.Env("iscsi_target_iqn", iqn))...)
	if err != nil {
		return nil, err
	}
	return runner.Lines(out), nil
}

// SetMutualChapSecret sets the initiator's mutual CHAP secret.
func (p PowerShell) SetMutualChapSecret(ctx context.Context, secret string) error {
	_, err := runner.Script(ctx, p.Runner, "Set-IscsiChapSecret", scriptSetMutual, runner.Env("iscsi_mutual_chap_secret", secret))
	return err
}
