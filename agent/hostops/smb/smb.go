package smb

import (
	"context"
	"fmt"
	"strings"

	"github.com/pipeguard/pipeguard/agent/hostops/runner"
)

// API is the smb host operations. Remote paths are validated UNC paths; the
// local path has been confined by the caller.
type API interface {
	// IsMapped reports whether a global mapping of remotePath exists and is OK.
	IsMapped(ctx context.Context, remotePath string) (bool, error)
	// PathValid reports whether remotePath is reachable through its mapping.
	PathValid(ctx context.Context, remotePath string) (bool, error)
	// NewGlobalMapping maps a share for the whole host.
	NewGlobalMapping(ctx context.Context, remotePath, username, password string, requirePrivacy bool) error
	// NewLink creates localPath as a directory symlink to remotePath.
	NewLink(ctx context.Context, remotePath, localPath string) error
	// RemoveGlobalMapping removes the global mapping of remotePath.
	RemoveGlobalMapping(ctx context.Context, remotePath string) error
}

// Cmdlets is what the smb group still runs in PowerShell: the SMB global
// mappings. Native runs the path check and the link.
type Cmdlets interface {
	IsMapped(ctx context.Context, remotePath string) (bool, error)
	NewGlobalMapping(ctx context.Context, remotePath, username, password string, requirePrivacy bool) error
	RemoveGlobalMapping(ctx context.Context, remotePath string) error
}

// The scripts. They are constants: request values are read from $Env:.
const (
	scriptIsMapped = `$m = Get-SmbGlobalMapping -RemotePath $Env:smbremotepath -ErrorAction SilentlyContinue; ` +
		`if ($m -and $m.Status -eq 'OK') { 'true' } else { 'false' }`
	// An empty password reaches the worker as no variable at all ($null),
	// which ConvertTo-SecureString refuses: it is an empty SecureString.
	scriptNewMapping = `if ([string]::IsNullOrEmpty($Env:smbpassword)) { $pw = New-Object -TypeName System.Security.SecureString } ` +
		`else { $pw = ConvertTo-SecureString -String $Env:smbpassword -AsPlainText -Force }; ` +
		`$cred = New-Object -TypeName System.Management.Automation.PSCredential -ArgumentList $Env:smbuser, $pw; ` +
		`New-SmbGlobalMapping -RemotePath $Env:smbremotepath -Credential $cred -RequirePrivacy ($Env:smbrequireprivacy -eq 'true') | Out-Null`
	// Without a user name the share is mapped with no credential, as the
	// host's own identity, as CSI Proxy maps it.
	scriptNewMappingNoCredential = `New-SmbGlobalMapping -RemotePath $Env:smbremotepath -RequirePrivacy ($Env:smbrequireprivacy -eq 'true') | Out-Null`
	scriptRemoveMapping          = `Remove-SmbGlobalMapping -RemotePath $Env:smbremotepath -Force`
)

// PowerShell is Cmdlets, run through a runner.Runner (the agent's
// PowerShell workers).
type PowerShell struct {
	Runner runner.Runner
}

var _ Cmdlets = PowerShell{}

func (p PowerShell) boolean(ctx context.Context, op, script string, env ...string) (bool, error) {
	out, err := runner.Script(ctx, p.Runner, op, script, env...)
	if err != nil {
		return false, err
	}
	return strings.EqualFold(strings.TrimSpace(string(out)), "true"), nil
}

// IsMapped runs Get-SmbGlobalMapping.
func (p PowerShell) IsMapped(ctx context.Context, remotePath string) (bool, error) {
	return p.boolean(ctx, "Get-SmbGlobalMapping", scriptIsMapped, runner.Env("smbremotepath", remotePath))
}

// NewGlobalMapping runs New-SmbGlobalMapping with a credential built in the
// script from environment variables, so the password never appears in text.
// An empty username maps without a credential, as CSI Proxy does (its
// password, if any, is not used).
func (p PowerShell) NewGlobalMapping(ctx context.Context, remotePath, username, password string, requirePrivacy bool) error {
	if username == "" {
		_, err := runner.Script(ctx, p.Runner, "New-SmbGlobalMapping", scriptNewMappingNoCredential,
			runner.Env("smbremotepath", remotePath),
			runner.Env("smbrequireprivacy", fmt.Sprint(requirePrivacy)))
		return err
	}
	_, err := runner.Script(ctx, p.Runner, "New-SmbGlobalMapping", scriptNewMapping,
		runner.Env("smbuser", username),
		runner.Env("smbpassword", password),
		runner.Env("smbremotepath", remotePath),
		runner.Env("smbrequireprivacy", fmt.Sprint(requirePrivacy)))
	return err
}

// RemoveGlobalMapping runs Remove-SmbGlobalMapping.
func (p PowerShell) RemoveGlobalMapping(ctx context.Context, remotePath string) error {
	_, err := runner.Script(ctx, p.Runner, "Remove-SmbGlobalMapping", scriptRemoveMapping, runner.Env("smbremotepath", remotePath))
	return err
}
