package smb

import (
	"context"
	"errors"
	"reflect"
	"testing"

	"github.com/pipeguard/pipeguard/agent/hostops/runner"
)

func TestCommands(t *testing.T) {
	ctx := context.Background()
	cases := map[string]struct {
		call   func(PowerShell) (any, error)
		out    string
		script string
		env    []string
		want   any
	}{
		"IsMapped": {
			call: func(p PowerShell) (any, error) { return p.IsMapped(ctx, `\\srv\share`) },
			out:  "true\r\n", want: true,
			script: scriptIsMapped, env: []string{`smbremotepath=\\srv\share`},
		},
		"PathValid false": {
			call: func(p PowerShell) (any, error) { return p.PathValid(ctx, `\\srv\share\d`) },
			out:  "False", want: false,
			script: scriptPathValid, env: []string{`smbremotepath=\\srv\share\d`},
		},
		"NewGlobalMapping": {
			call: func(p PowerShell) (any, error) {
				return nil, p.NewGlobalMapping(ctx, `\\srv\share`, `DOMAIN\user`, "s3cret", true)
			},
			script: scriptNewMapping,
			env:    []string{`smbuser=DOMAIN\user`, "smbpassword=s3cret", `smbremotepath=\\srv\share`, "smbrequireprivacy=true"},
		},
		"NewLink adds the trailing backslash": {
			call:   func(p PowerShell) (any, error) { return nil, p.NewLink(ctx, `\\srv\share\d`, `C:\var\lib\kubelet\x`) },
			script: scriptNewLink,
			env:    []string{`smbremotepath=\\srv\share\d\`, `smblocalpath=C:\var\lib\kubelet\x`},
		},
		"RemoveGlobalMapping": {
			call:   func(p PowerShell) (any, error) { return nil, p.RemoveGlobalMapping(ctx, `\\srv\share`) },
			script: scriptRemoveMapping, env: []string{`smbremotepath=\\srv\share`},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			f := &runner.Fake{Respond: func(runner.Command) ([]byte, error) { return []byte(tc.out), nil }}
			got, err := tc.call(PowerShell{Runner: f})
			if err != nil {
				t.Fatal(err)
			}
			if tc.want != nil && got != tc.want {
				t.Errorf("result %v, want %v", got, tc.want)
			}
			want := []runner.Command{runner.PowerShell(tc.script, tc.env...)}
			if cmds := f.Commands(); !reflect.DeepEqual(cmds, want) {
				t.Errorf("ran %#v\nwant %#v", cmds, want)
			}
		})
	}
}

func TestRunnerFailureIsReported(t *testing.T) {
	f := &runner.Fake{Respond: func(runner.Command) ([]byte, error) { return nil, errors.New("exit status 1: access denied") }}
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
		"PathValid remote":    func(p PowerShell, s string) error { _, err := p.PathValid(ctx, s); return err },
		"NewMapping remote":   func(p PowerShell, s string) error { return p.NewGlobalMapping(ctx, s, "u", "p", true) },
		"NewMapping user":     func(p PowerShell, s string) error { return p.NewGlobalMapping(ctx, `\\s\x`, s, "p", true) },
		"NewMapping password": func(p PowerShell, s string) error { return p.NewGlobalMapping(ctx, `\\s\x`, "u", s, false) },
		"NewLink remote":      func(p PowerShell, s string) error { return p.NewLink(ctx, s, `C:\x`) },
		"NewLink local":       func(p PowerShell, s string) error { return p.NewLink(ctx, `\\s\x`, s) },
		"Remove remote":       func(p PowerShell, s string) error { return p.RemoveGlobalMapping(ctx, s) },
	}
	for name, call := range calls {
		for _, hostile := range runner.Hostile() {
			t.Run(name+"/"+hostile, func(t *testing.T) {
				f := &runner.Fake{}
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
