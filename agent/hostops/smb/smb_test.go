package smb

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/pipeguard/pipeguard/agent/hostops/runner"
	"github.com/pipeguard/pipeguard/agent/hostops/runner/runnertest"
)

func TestCommands(t *testing.T) {
	ctx := context.Background()
	cases := map[string]runnertest.Case[PowerShell]{
		"IsMapped": {
			Call: func(p PowerShell) (any, error) { return p.IsMapped(ctx, `\\srv\share`) },
			Out:  "true\r\n", Want: true,
			Script: scriptIsMapped, Env: []string{`smbremotepath=\\srv\share`},
		},
		"NewGlobalMapping": {
			Call: func(p PowerShell) (any, error) {
				return nil, p.NewGlobalMapping(ctx, `\\srv\share`, `DOMAIN\user`, "s3cret", true)
			},
			Script: scriptNewMapping,
			Env:    []string{`smbuser=DOMAIN\user`, "smbpassword=s3cret", `smbremotepath=\\srv\share`, "smbrequireprivacy=true"},
		},
		"NewGlobalMapping without a user name": {
			Call: func(p PowerShell) (any, error) {
				return nil, p.NewGlobalMapping(ctx, `\\srv\share`, "", "ignored", false)
			},
			Script: scriptNewMappingNoCredential,
			Env:    []string{`smbremotepath=\\srv\share`, "smbrequireprivacy=false"},
		},
		"NewGlobalMapping with a user and an empty password": {
			Call: func(p PowerShell) (any, error) {
				return nil, p.NewGlobalMapping(ctx, `\\srv\share`, `DOMAIN\user`, "", true)
			},
			Script: scriptNewMapping,
			Env:    []string{`smbuser=DOMAIN\user`, "smbpassword=", `smbremotepath=\\srv\share`, "smbrequireprivacy=true"},
		},
		"RemoveGlobalMapping": {
			Call:   func(p PowerShell) (any, error) { return nil, p.RemoveGlobalMapping(ctx, `\\srv\share`) },
			Script: scriptRemoveMapping, Env: []string{`smbremotepath=\\srv\share`},
		},
	}
	runnertest.Run(t, cases, func(r runner.Runner) PowerShell { return PowerShell{Runner: r} })
}

func TestRunnerFailureIsReported(t *testing.T) {
	f := &runnertest.Fake{Respond: func(runner.Command) ([]byte, error) { return nil, errors.New("exit status 1: access denied") }}
	err := PowerShell{Runner: f}.RemoveGlobalMapping(context.Background(), `\\srv\share`)
	if err == nil || err.Error() != "Remove-SmbGlobalMapping failed: exit status 1: access denied" {
		t.Fatalf("err = %v", err)
	}
}

// TestInjection sends every hostile string in every string parameter: it
// must reach the command only through the environment.
func TestInjection(t *testing.T) {
	ctx := context.Background()
	calls := map[string]func(PowerShell, string) error{
		"IsMapped remote":     func(p PowerShell, s string) error { _, err := p.IsMapped(ctx, s); return err },
		"NewMapping remote":   func(p PowerShell, s string) error { return p.NewGlobalMapping(ctx, s, "u", "p", true) },
		"NewMapping user":     func(p PowerShell, s string) error { return p.NewGlobalMapping(ctx, `\\s\x`, s, "p", true) },
		"NewMapping password": func(p PowerShell, s string) error { return p.NewGlobalMapping(ctx, `\\s\x`, "u", s, false) },
		"Remove remote":       func(p PowerShell, s string) error { return p.RemoveGlobalMapping(ctx, s) },
	}
	for name, call := range calls {
		for _, hostile := range runnertest.Hostile() {
			t.Run(name+"/"+hostile, func(t *testing.T) {
				f := &runnertest.Fake{}
				if err := call(PowerShell{Runner: f}, hostile); err != nil {
					t.Fatal(err)
				}
				if err := f.CheckNoText(hostile); err != nil {
					t.Fatal(err)
				}
				if err := f.CheckInEnv(hostile); err != nil {
					t.Fatal(err)
				}
			})
		}
	}
}

// The scripts decide as CSI Proxy does: a credential only with a user name;
// an empty password, which the worker receives as no variable, becomes an
// empty SecureString rather than an argument ConvertTo-SecureString refuses.
func TestNewMappingScripts(t *testing.T) {
	if strings.Contains(scriptNewMappingNoCredential, "Credential") || strings.Contains(scriptNewMappingNoCredential, "smbuser") ||
		strings.Contains(scriptNewMappingNoCredential, "smbpassword") {
		t.Errorf("the mapping without a user name reads a credential: %s", scriptNewMappingNoCredential)
	}
	for _, want := range []string{
		`if ([string]::IsNullOrEmpty($Env:smbpassword)) { $pw = New-Object -TypeName System.Security.SecureString }`,
		`else { $pw = ConvertTo-SecureString -String $Env:smbpassword -AsPlainText -Force }`,
		`-Credential $cred`,
	} {
		if !strings.Contains(scriptNewMapping, want) {
			t.Errorf("the mapping with a user name lacks %q: %s", want, scriptNewMapping)
		}
	}
}
