package volume

import (
	"context"
	"reflect"
	"testing"

	"github.com/pipeguard/pipeguard/agent/hostops/runner"
)

const vol = `\\?\Volume{452e318a-5cde-421e-9831-b9853c521012}\`

func TestCommands(t *testing.T) {
	ctx := context.Background()
	type stats struct{ Total, Used int64 }
	cases := map[string]struct {
		call   func(PowerShell) (any, error)
		out    string
		script string
		env    []string
		want   any
	}{
		"ListVolumesOnDisk all partitions": {
			call: func(p PowerShell) (any, error) { return p.ListVolumesOnDisk(ctx, 1, 0) },
			out:  vol + "\r\n\r\n", want: []string{vol},
			script: scriptListOnDisk, env: []string{"disknumber=1"},
		},
		"ListVolumesOnDisk one partition": {
			call:   func(p PowerShell) (any, error) { return p.ListVolumesOnDisk(ctx, 1, 2) },
			script: scriptListOnPart, env: []string{"disknumber=1", "partitionnumber=2"},
		},
		"MountVolume": {
			call:   func(p PowerShell) (any, error) { return nil, p.MountVolume(ctx, vol, `C:\var\lib\kubelet\x`) },
			script: scriptMount, env: []string{"volumeid=" + vol, `targetpath=C:\var\lib\kubelet\x`},
		},
		"UnmountVolume": {
			call:   func(p PowerShell) (any, error) { return nil, p.UnmountVolume(ctx, vol, `C:\var\lib\kubelet\x`) },
			script: scriptUnmount, env: []string{"volumeid=" + vol, `targetpath=C:\var\lib\kubelet\x`},
		},
		"IsVolumeFormatted NTFS": {
			call: func(p PowerShell) (any, error) { return p.IsVolumeFormatted(ctx, vol) },
			out:  "NTFS\r\n", want: true, script: scriptFSType, env: []string{"volumeid=" + vol},
		},
		"IsVolumeFormatted raw": {
			call: func(p PowerShell) (any, error) { return p.IsVolumeFormatted(ctx, vol) },
			out:  "Unknown\r\n", want: false, script: scriptFSType, env: []string{"volumeid=" + vol},
		},
		"FormatVolume": {
			call:   func(p PowerShell) (any, error) { return nil, p.FormatVolume(ctx, vol) },
			script: scriptFormat, env: []string{"volumeid=" + vol},
		},
		"ResizeVolume": {
			call:   func(p PowerShell) (any, error) { return nil, p.ResizeVolume(ctx, vol, 0) },
			script: scriptResize, env: []string{"volumeid=" + vol, "sizebytes=0"},
		},
		"GetVolumeStats": {
			call: func(p PowerShell) (any, error) {
				total, used, err := p.GetVolumeStats(ctx, vol)
				return stats{total, used}, err
			},
			out: `{"Size":1000,"SizeRemaining":400}`, want: stats{1000, 600},
			script: scriptStats, env: []string{"volumeid=" + vol},
		},
		"GetDiskNumberFromVolumeID": {
			call: func(p PowerShell) (any, error) { return p.GetDiskNumberFromVolumeID(ctx, vol) },
			out:  "3\r\n", want: uint32(3), script: scriptDiskNumber, env: []string{"volumeid=" + vol},
		},
		"GetVolumeIDFromTargetPath": {
			call: func(p PowerShell) (any, error) { return p.GetVolumeIDFromTargetPath(ctx, `C:\var\lib\kubelet\x`) },
			out:  "Volume{452e318a-5cde-421e-9831-b9853c521012}\\\r\n", want: vol,
			script: scriptFromTarget, env: []string{`targetpath=C:\var\lib\kubelet\x`},
		},
		"GetClosestVolumeIDFromTargetPath": {
			call: func(p PowerShell) (any, error) {
				return p.GetClosestVolumeIDFromTargetPath(ctx, `C:\var\lib\kubelet\x`)
			},
			out: vol + "\r\n", want: vol, script: scriptClosest, env: []string{`targetpath=C:\var\lib\kubelet\x`},
		},
		"WriteVolumeCache": {
			call:   func(p PowerShell) (any, error) { return nil, p.WriteVolumeCache(ctx, vol) },
			script: scriptWriteCache, env: []string{"volumeid=" + vol},
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

func TestTargetNotAVolume(t *testing.T) {
	f := &runner.Fake{Respond: func(runner.Command) ([]byte, error) { return []byte(`\\srv\share\`), nil }}
	_, err := PowerShell{Runner: f}.GetVolumeIDFromTargetPath(context.Background(), `C:\x`)
	if err == nil || err.Error() != `C:\x links to \\srv\share\, not to a volume` {
		t.Fatalf("err = %v", err)
	}
}

func TestInjection(t *testing.T) {
	ctx := context.Background()
	calls := map[string]func(PowerShell, string) error{
		"MountVolume id":        func(p PowerShell, s string) error { return p.MountVolume(ctx, s, `C:\x`) },
		"MountVolume target":    func(p PowerShell, s string) error { return p.MountVolume(ctx, vol, s) },
		"UnmountVolume id":      func(p PowerShell, s string) error { return p.UnmountVolume(ctx, s, `C:\x`) },
		"UnmountVolume target":  func(p PowerShell, s string) error { return p.UnmountVolume(ctx, vol, s) },
		"IsVolumeFormatted":     func(p PowerShell, s string) error { _, err := p.IsVolumeFormatted(ctx, s); return err },
		"FormatVolume":          func(p PowerShell, s string) error { return p.FormatVolume(ctx, s) },
		"ResizeVolume":          func(p PowerShell, s string) error { return p.ResizeVolume(ctx, s, 1) },
		"GetVolumeStats":        func(p PowerShell, s string) error { _, _, err := p.GetVolumeStats(ctx, s); return err },
		"GetDiskNumber":         func(p PowerShell, s string) error { _, err := p.GetDiskNumberFromVolumeID(ctx, s); return err },
		"GetVolumeIDFromTarget": func(p PowerShell, s string) error { _, err := p.GetVolumeIDFromTargetPath(ctx, s); return err },
		"GetClosestVolumeID":    func(p PowerShell, s string) error { _, err := p.GetClosestVolumeIDFromTargetPath(ctx, s); return err },
		"WriteVolumeCache":      func(p PowerShell, s string) error { return p.WriteVolumeCache(ctx, s) },
	}
	out := map[string]string{
		scriptStats: `{"Size":1,"SizeRemaining":1}`, scriptDiskNumber: "1", scriptFromTarget: vol, scriptClosest: vol,
	}
	for name, call := range calls {
		for _, hostile := range runner.Hostile() {
			t.Run(name+"/"+hostile, func(t *testing.T) {
				f := &runner.Fake{Respond: func(c runner.Command) ([]byte, error) {
					for script, o := range out {
						if c.Args[len(c.Args)-1] == runner.PowerShell(script).Args[len(c.Args)-1] {
							return []byte(o), nil
						}
					}
					return nil, nil
				}}
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
