package smb

import (
	"context"
	"fmt"
	"strings"

	"github.com/pipeguard/pipeguard/agent/hostops"
	"github.com/pipeguard/pipeguard/agent/hostops/limits"
	"github.com/pipeguard/pipeguard/agent/hostops/win32"
)

// Native is API with the path check and the link made by direct Win32
// calls, as CSI Proxy 1.3 makes them; the global mappings, which have no
// Win32 equivalent here, run through Cmdlets. Every Win32 call runs under
// Limits (limits.Call), named after its function, so that a share that
// does not answer is answered at the group's deadline.
// Build it with New, which checks that it has what it needs.
type Native struct{ deps }

type deps = Deps

// Deps are what the native smb operations are made of.
type Deps struct {
	// Sys makes the Win32 calls; win32.New() on the host.
	Sys win32.Sys
	// Limits bounds every Win32 call; nil runs them unbounded.
	Limits limits.Limiter
	// Cmdlets runs IsMapped, NewGlobalMapping and RemoveGlobalMapping, and
	// nothing else: WMI on the host.
	Cmdlets Cmdlets
}

// New returns the native smb operations over d. Sys and Cmdlets are
// required: without them New answers an internal error naming what is
// missing, once, as the agent is assembled, and no call is ever made.
func New(d Deps) (Native, error) {
	if err := hostops.Assembled("smb", hostops.Dep{Present: d.Sys != nil, Name: "a Win32 host (Deps.Sys)"},
		hostops.Dep{Present: d.Cmdlets != nil, Name: "the WMI smb operations (Deps.Cmdlets, for IsMapped, NewGlobalMapping and RemoveGlobalMapping)"}); err != nil {
		return Native{}, err
	}
	return Native{deps: d}, nil
}

var _ API = Native{}

// IsMapped runs Cmdlets' IsMapped.
func (n Native) IsMapped(ctx context.Context, remotePath string) (bool, error) {
	return n.Cmdlets.IsMapped(ctx, remotePath)
}

// PathValid reports whether remotePath answers (GetFileAttributesW): a
// path that does not exist is false; a share that fails otherwise (refused
// credentials, no network path, no answer before the deadline) is false
// and the error, which the caller takes as a mapping to replace.
func (n Native) PathValid(ctx context.Context, remotePath string) (bool, error) {
	ok, err := win32.Call(ctx, n.Limits, "GetFileAttributesW", func() (bool, error) { return n.Sys.FileExists(remotePath) })
	if err != nil {
		return false, fmt.Errorf("checking that %s answers: %w", remotePath, err)
	}
	return ok, nil
}

// NewGlobalMapping runs Cmdlets' NewGlobalMapping.
func (n Native) NewGlobalMapping(ctx context.Context, remotePath, username, password string, requirePrivacy bool) error {
	return n.Cmdlets.NewGlobalMapping(ctx, remotePath, username, password, requirePrivacy)
}

// NewLink creates localPath as a directory symbolic link to remotePath
// (CreateSymbolicLinkW), the target given a trailing backslash so that Go
// resolves paths through the link, as CSI Proxy does. The share is not
// looked at: a share that does not answer cannot hold the call.
func (n Native) NewLink(ctx context.Context, remotePath, localPath string) error {
	target := remotePath
	if !strings.HasSuffix(target, `\`) {
		target += `\`
	}
	if err := win32.Do(ctx, n.Limits, "CreateSymbolicLinkW", func() error { return n.Sys.Symlink(target, localPath) }); err != nil {
		return fmt.Errorf("linking %s to %s: %w", localPath, target, err)
	}
	return nil
}

// RemoveGlobalMapping runs Cmdlets' RemoveGlobalMapping.
func (n Native) RemoveGlobalMapping(ctx context.Context, remotePath string) error {
	return n.Cmdlets.RemoveGlobalMapping(ctx, remotePath)
}
