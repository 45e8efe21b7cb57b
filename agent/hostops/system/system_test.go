package system

import (
	"context"
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
		"BIOSSerialNumber": {
			call: func(p PowerShell) (any, error) { return p.BIOSSerialNumber(ctx) },
			out:  "  VMware-42 1a\r\n", want: "VMware-42 1a", script: scriptBIOSSerial,
		},
		"StartService": {
			call:   func(p PowerShell) (any, error) { return nil, p.StartService(ctx, "csiproxy") },
			script: scriptStart, env: []string{"servicename=csiproxy"},
		},
		"StopService": {
			call:   func(p PowerShell) (any, error) { return nil, p.StopService(ctx, "csiproxy", false) },
			script: scriptStop, env: []string{"servicename=csiproxy"},
		},
		"StopService force": {
			call:   func(p PowerShell) (any, error) { return nil, p.StopService(ctx, "csiproxy", true) },
			script: scriptStopForce, env: []string{"servicename=csiproxy"},
		},
		"GetService": {
			call:   func(p PowerShell) (any, error) { return p.GetService(ctx, "LanmanServer") },
			out:    `{"DisplayName":"Server","StartType":2,"Status":4}`,
			want:   Service{DisplayName: "Server", StartType: 2, Status: 4},
			script: scriptGetService, env: []string{"servicename=LanmanServer"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			f := &runner.Fake{Respond: func(runner.Command) ([]byte, error) { return []byte(tc.out), nil }}
			got, err := tc.call(PowerShell{Runner: f})
			if err != nil {
				t.Fatal(err)
			}
			if tc.want != nil && !reflect.DeepEqual(got, tc.want) {
				t.Errorf("result %#v, want %#v", got, tc.want)
			}
			want := []runner.Command{runner.PowerShell(tc.script, tc.env...)}
			if cmds := f.Commands(); !reflect.DeepEqual(cmds, want) {
				t.Errorf("ran %#v\nwant %#v", cmds, want)
			}
		})
	}
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
