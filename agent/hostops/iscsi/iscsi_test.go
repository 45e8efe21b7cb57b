package iscsi

import (
	"context"
	"testing"

	"github.com/pipeguard/pipeguard/agent/hostops/runner"
	"github.com/pipeguard/pipeguard/agent/hostops/runner/runnertest"
)

const iqn = "iqn.2001-04.com.example:storage.disk1"

func TestCommands(t *testing.T) {
	ctx := context.Background()
	pt := Portal{Address: "10.0.0.5", Port: 3260}
	portal := []string{"iscsi_tp_address=10.0.0.5", "iscsi_tp_port=3260"}
	with := func(env ...string) []string { return append(append([]string(nil), portal...), env...) }
	cases := map[string]runnertest.Case[PowerShell]{
		"AddTargetPortal": {
			Call:   func(p PowerShell) (any, error) { return nil, p.AddTargetPortal(ctx, pt) },
			Script: scriptAdd, Env: portal,
		},
		"DiscoverTargetPortal": {
			Call: func(p PowerShell) (any, error) { return p.DiscoverTargetPortal(ctx, pt) },
			Out:  iqn + "\r\niqn.2001-04.com.example:storage.disk2\r\n", Want: []string{iqn, "iqn.2001-04.com.example:storage.disk2"},
			Script: scriptDiscover, Env: portal,
		},
		"RemoveTargetPortal": {
			Call:   func(p PowerShell) (any, error) { return nil, p.RemoveTargetPortal(ctx, pt) },
			Script: scriptRemove, Env: portal,
		},
		"ListTargetPortals": {
			Call: func(p PowerShell) (any, error) { return p.ListTargetPortals(ctx) },
			Out:  `[{"TargetPortalAddress":"10.0.0.5","TargetPortalPortNumber":3260},{"TargetPortalAddress":"10.0.0.6","TargetPortalPortNumber":3261}]`,
			Want: []Portal{pt, {Address: "10.0.0.6", Port: 3261}}, Script: scriptList,
		},
		"ConnectTarget one-way CHAP": {
			Call: func(p PowerShell) (any, error) {
				return nil, p.ConnectTarget(ctx, pt, iqn, AuthOneWayCHAP, "user", "secret123456")
			},
			Script: scriptConnect,
			Env:    with("iscsi_target_iqn="+iqn, "iscsi_auth_type=ONEWAYCHAP", "iscsi_chap_user=user", "iscsi_chap_secret=secret123456"),
		},
		"ConnectTarget without CHAP": {
			Call:   func(p PowerShell) (any, error) { return nil, p.ConnectTarget(ctx, pt, iqn, AuthNone, "", "") },
			Script: scriptConnect,
			Env:    with("iscsi_target_iqn="+iqn, "iscsi_auth_type=NONE", "iscsi_chap_user=", "iscsi_chap_secret="),
		},
		"DisconnectTarget": {
			Call:   func(p PowerShell) (any, error) { return nil, p.DisconnectTarget(ctx, pt, iqn) },
			Script: scriptDisconnect, Env: with("iscsi_target_iqn=" + iqn),
		},
		"GetTargetDisks": {
			Call: func(p PowerShell) (any, error) { return p.GetTargetDisks(ctx, pt, iqn) },
			Out:  "2\r\n3\r\n", Want: []string{"2", "3"},
			Script: scriptDisks, Env: with("iscsi_target_iqn=" + iqn),
		},
		"SetMutualChapSecret": {
			Call:   func(p PowerShell) (any, error) { return nil, p.SetMutualChapSecret(ctx, "mutual-secret") },
			Script: scriptSetMutual, Env: []string{"iscsi_mutual_chap_secret=mutual-secret"},
		},
	}
	runnertest.Run(t, cases, func(r runner.Runner) PowerShell { return PowerShell{Runner: r} })
}

func TestInjection(t *testing.T) {
	ctx := context.Background()
	ok := Portal{Address: "10.0.0.5", Port: 3260}
	calls := map[string]func(PowerShell, string) error{
		"AddTargetPortal address": func(p PowerShell, s string) error { return p.AddTargetPortal(ctx, Portal{Address: s}) },
		"Discover address": func(p PowerShell, s string) error {
			_, err := p.DiscoverTargetPortal(ctx, Portal{Address: s})
			return err
		},
		"RemoveTargetPortal address": func(p PowerShell, s string) error { return p.RemoveTargetPortal(ctx, Portal{Address: s}) },
		"ConnectTarget address": func(p PowerShell, s string) error {
			return p.ConnectTarget(ctx, Portal{Address: s}, iqn, AuthNone, "", "")
		},
		"ConnectTarget iqn":         func(p PowerShell, s string) error { return p.ConnectTarget(ctx, ok, s, AuthNone, "", "") },
		"ConnectTarget chap user":   func(p PowerShell, s string) error { return p.ConnectTarget(ctx, ok, iqn, AuthMutualCHAP, s, "x") },
		"ConnectTarget chap secret": func(p PowerShell, s string) error { return p.ConnectTarget(ctx, ok, iqn, AuthOneWayCHAP, "u", s) },
		"DisconnectTarget iqn":      func(p PowerShell, s string) error { return p.DisconnectTarget(ctx, ok, s) },
		"GetTargetDisks iqn":        func(p PowerShell, s string) error { _, err := p.GetTargetDisks(ctx, ok, s); return err },
		"SetMutualChapSecret":       func(p PowerShell, s string) error { return p.SetMutualChapSecret(ctx, s) },
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
