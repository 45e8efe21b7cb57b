package iscsi

import (
	"context"
	"reflect"
	"testing"

	"github.com/pipeguard/pipeguard/agent/hostops/runner"
)

const iqn = "iqn.2001-04.com.example:storage.disk1"

func TestCommands(t *testing.T) {
	ctx := context.Background()
	pt := Portal{Address: "10.0.0.5", Port: 3260}
	portal := []string{"iscsi_tp_address=10.0.0.5", "iscsi_tp_port=3260"}
	with := func(env ...string) []string { return append(append([]string(nil), portal...), env...) }
	cases := map[string]struct {
		call   func(PowerShell) (any, error)
		out    string
		script string
		env    []string
		want   any
	}{
		"AddTargetPortal": {
			call:   func(p PowerShell) (any, error) { return nil, p.AddTargetPortal(ctx, pt) },
			script: scriptAdd, env: portal,
		},
		"DiscoverTargetPortal": {
			call: func(p PowerShell) (any, error) { return p.DiscoverTargetPortal(ctx, pt) },
			out:  iqn + "\r\niqn.2001-04.com.example:storage.disk2\r\n", want: []string{iqn, "iqn.2001-04.com.example:storage.disk2"},
			script: scriptDiscover, env: portal,
		},
		"RemoveTargetPortal": {
			call:   func(p PowerShell) (any, error) { return nil, p.RemoveTargetPortal(ctx, pt) },
			script: scriptRemove, env: portal,
		},
		"ListTargetPortals": {
			call: func(p PowerShell) (any, error) { return p.ListTargetPortals(ctx) },
			out:  `[{"TargetPortalAddress":"10.0.0.5","TargetPortalPortNumber":3260},{"TargetPortalAddress":"10.0.0.6","TargetPortalPortNumber":3261}]`,
			want: []Portal{pt, {Address: "10.0.0.6", Port: 3261}}, script: scriptList,
		},
		"ConnectTarget one-way CHAP": {
			call: func(p PowerShell) (any, error) {
				return nil, p.ConnectTarget(ctx, pt, iqn, AuthOneWayCHAP, "user", "secret123456")
			},
			script: scriptConnect,
			env:    with("iscsi_target_iqn="+iqn, "iscsi_auth_type=ONEWAYCHAP", "iscsi_chap_user=user", "iscsi_chap_secret=secret123456"),
		},
		"ConnectTarget without CHAP": {
			call:   func(p PowerShell) (any, error) { return nil, p.ConnectTarget(ctx, pt, iqn, AuthNone, "", "") },
			script: scriptConnect,
			env:    with("iscsi_target_iqn="+iqn, "iscsi_auth_type=NONE", "iscsi_chap_user=", "iscsi_chap_secret="),
		},
		"DisconnectTarget": {
			call:   func(p PowerShell) (any, error) { return nil, p.DisconnectTarget(ctx, pt, iqn) },
			script: scriptDisconnect, env: with("iscsi_target_iqn=" + iqn),
		},
		"GetTargetDisks": {
			call: func(p PowerShell) (any, error) { return p.GetTargetDisks(ctx, pt, iqn) },
			out:  "2\r\n3\r\n", want: []string{"2", "3"},
			script: scriptDisks, env: with("iscsi_target_iqn=" + iqn),
		},
		"SetMutualChapSecret": {
			call:   func(p PowerShell) (any, error) { return nil, p.SetMutualChapSecret(ctx, "mutual-secret") },
			script: scriptSetMutual, env: []string{"iscsi_mutual_chap_secret=mutual-secret"},
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
