package volume

import (
	"context"
	"testing"

	"github.com/pipeguard/pipeguard/agent/hostops/runner"
	"github.com/pipeguard/pipeguard/agent/hostops/runner/runnertest"
)

const vol = `\\?\Volume{452e318a-5cde-421e-9831-b9853c521012}\`

func TestCommands(t *testing.T) {
	ctx := context.Background()
	cases := map[string]runnertest.Case[PowerShell]{
		"FormatVolume": {
			Call:   func(p PowerShell) (any, error) { return nil, p.FormatVolume(ctx, vol) },
			Script: scriptFormat, Env: []string{"volumeid=" + vol},
		},
		"ResizeVolume": {
			Call:   func(p PowerShell) (any, error) { return nil, p.ResizeVolume(ctx, vol, 0) },
			Script: scriptResize, Env: []string{"volumeid=" + vol, "sizebytes=0"},
		},
	}
	runnertest.Run(t, cases, func(r runner.Runner) PowerShell { return PowerShell{Runner: r} })
}

func TestInjection(t *testing.T) {
	ctx := context.Background()
	calls := map[string]func(PowerShell, string) error{
		"FormatVolume": func(p PowerShell, s string) error { return p.FormatVolume(ctx, s) },
		"ResizeVolume": func(p PowerShell, s string) error { return p.ResizeVolume(ctx, s, 1) },
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
