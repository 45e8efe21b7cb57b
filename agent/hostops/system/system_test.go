package system

import (
	"context"
	"testing"

	"github.com/pipeguard/pipeguard/agent/hostops/runner"
	"github.com/pipeguard/pipeguard/agent/hostops/runner/runnertest"
)

func TestCommands(t *testing.T) {
	ctx := context.Background()
	cases := map[string]runnertest.Case[PowerShell]{
		"BIOSSerialNumber": {
			Call: func(p PowerShell) (any, error) { return p.BIOSSerialNumber(ctx) },
			Out:  "  VMware-42 1a\r\n", Want: "VMware-42 1a", Script: scriptBIOSSerial,
		},
		"StartService": {
			Call:   func(p PowerShell) (any, error) { return nil, p.StartService(ctx, "csiproxy") },
			Script: scriptStart, Env: []string{"servicename=csiproxy"},
		},
		"StopService": {
			Call:   func(p PowerShell) (any, error) { return nil, p.StopService(ctx, "csiproxy", false) },
			Script: scriptStop, Env: []string{"servicename=csiproxy"},
		},
		"StopService force": {
			Call:   func(p PowerShell) (any, error) { return nil, p.StopService(ctx, "csiproxy", true) },
			Script: scriptStopForce, Env: []string{"servicename=csiproxy"},
		},
		"GetService": {
			Call:   func(p PowerShell) (any, error) { return p.GetService(ctx, "LanmanServer") },
			Out:    `{"DisplayName":"Server","StartType":2,"Status":4}`,
			Want:   Service{DisplayName: "Server", StartType: 2, Status: 4},
			Script: scriptGetService, Env: []string{"servicename=LanmanServer"},
		},
	}
	runnertest.Run(t, cases, func(r runner.Runner) PowerShell { return PowerShell{Runner: r} })
}

func TestGetServiceGarbage(t *testing.T) {
	f := &runner.Fake{Respond: func(runner.Command) ([]byte, error) { return []byte("WARNING"), nil }}
	if _, err := (PowerShell{Runner: f}).GetService(context.Background(), "x"); err == nil {
		t.Fatal("garbage output parsed")
	}
}

func TestInjection(t *testing.T) {
	ctx := context.Background()
	calls := map[string]func(PowerShell, string) error{
		"StartService": func(p PowerShell, s string) error { return p.StartService(ctx, s) },
		"StopService":  func(p PowerShell, s string) error { return p.StopService(ctx, s, true) },
		"GetService": func(p PowerShell, s string) error {
			_, err := p.GetService(ctx, s)
			return err
		},
	}
	for name, call := range calls {
		for _, hostile := range runner.Hostile() {
			t.Run(name+"/"+hostile, func(t *testing.T) {
				f := &runner.Fake{Respond: func(runner.Command) ([]byte, error) { return []byte("{}"), nil }}
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
