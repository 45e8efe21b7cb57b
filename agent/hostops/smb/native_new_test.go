package smb

import (
	"testing"

	"github.com/pipeguard/pipeguard/agent/hostops/runner/runnertest"
	"github.com/pipeguard/pipeguard/agent/hostops/win32/win32test"
)

// New refuses, once, the native operations assembled without a Win32 host
// or without their PowerShell operations, naming what is missing.
func TestNewRefusesMissingDependencies(t *testing.T) {
	const (
		noSys     = "a Win32 host (Deps.Sys)"
		noCmdlets = "the PowerShell smb operations (Deps.Cmdlets, for IsMapped, NewGlobalMapping and RemoveGlobalMapping)"
		prefix    = "internal error: the native smb operations were assembled without "
	)
	cmdlets := PowerShell{Runner: &runnertest.Fake{}}
	for name, tc := range map[string]struct {
		deps Deps
		want string
	}{
		"no Sys":     {Deps{Cmdlets: cmdlets}, prefix + noSys},
		"no Cmdlets": {Deps{Sys: win32test.New()}, prefix + noCmdlets},
		"neither":    {Deps{}, prefix + noSys + " and " + noCmdlets},
	} {
		t.Run(name, func(t *testing.T) {
			if _, err := New(tc.deps); err == nil || err.Error() != tc.want {
				t.Fatalf("New: %v\nwant %q", err, tc.want)
			}
		})
	}
	if _, err := New(Deps{Sys: win32test.New(), Cmdlets: cmdlets}); err != nil {
		t.Fatalf("New with every dependency: %v", err)
	}
}
