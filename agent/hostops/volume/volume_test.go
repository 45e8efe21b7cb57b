package volume

import (
	"context"
	"errors"
	"testing"

	"github.com/pipeguard/pipeguard/agent/hostops/runner"
	"github.com/pipeguard/pipeguard/agent/hostops/runner/runnertest"
)

const vol = `\\?\Volume{452e318a-5cde-421e-9831-b9853c521012}\`

func TestCommands(t *testing.T) {
	ctx := context.Background()
	type stats struct{ Total, Used int64 }
	cases := map[string]runnertest.Case[PowerShell]{
		"ListVolumesOnDisk all partitions": {
			Call: func(p PowerShell) (any, error) { return p.ListVolumesOnDisk(ctx, 1, 0) },
			Out:  vol + "\r\n\r\n", Want: []string{vol},
			Script: scriptListOnDisk, Env: []string{"disknumber=1"},
		},
		"ListVolumesOnDisk one partition": {
			Call:   func(p PowerShell) (any, error) { return p.ListVolumesOnDisk(ctx, 1, 2) },
			Script: scriptListOnPart, Env: []string{"disknumber=1", "partitionnumber=2"},
		},
		"MountVolume": {
			Call:   func(p PowerShell) (any, error) { return nil, p.MountVolume(ctx, vol, `C:\var\lib\kubelet\x`) },
			Script: scriptMount, Env: []string{"volumeid=" + vol, `targetpath=C:\var\lib\kubelet\x`},
		},
		"UnmountVolume": {
			Call:   func(p PowerShell) (any, error) { return nil, p.UnmountVolume(ctx, vol, `C:\var\lib\kubelet\x`) },
			Script: scriptUnmount, Env: []string{"volumeid=" + vol, `targetpath=C:\var\lib\kubelet\x`},
		},
		"IsVolumeFormatted NTFS": {
			Call: func(p PowerShell) (any, error) { return p.IsVolumeFormatted(ctx, vol) },
			Out:  "NTFS\r\n", Want: true, Script: scriptFSType, Env: []string{"volumeid=" + vol},
		},
		"IsVolumeFormatted raw": {
			Call: func(p PowerShell) (any, error) { return p.IsVolumeFormatted(ctx, vol) },
			Out:  "Unknown\r\n", Want: false, Script: scriptFSType, Env: []string{"volumeid=" + vol},
		},
		"FormatVolume": {
			Call:   func(p PowerShell) (any, error) { return nil, p.FormatVolume(ctx, vol) },
			Script: scriptFormat, Env: []string{"volumeid=" + vol},
		},
		"ResizeVolume": {
			Call:   func(p PowerShell) (any, error) { return nil, p.ResizeVolume(ctx, vol, 0) },
			Script: scriptResize, Env: []string{"volumeid=" + vol, "sizebytes=0"},
		},
		"GetVolumeStats": {
			Call: func(p PowerShell) (any, error) {
				total, used, err := p.GetVolumeStats(ctx, vol)
				return stats{total, used}, err
			},
			Out: `{"Size":1000,"SizeRemaining":400}`, Want: stats{1000, 600},
			Script: scriptStats, Env: []string{"volumeid=" + vol},
		},
		"GetDiskNumberFromVolumeID": {
			Call: func(p PowerShell) (any, error) { return p.GetDiskNumberFromVolumeID(ctx, vol) },
			Out:  "3\r\n", Want: uint32(3), Script: scriptDiskNumber, Env: []string{"volumeid=" + vol},
		},
		"GetVolumeIDFromTargetPath": {
			Call: func(p PowerShell) (any, error) { return p.GetVolumeIDFromTargetPath(ctx, `C:\var\lib\kubelet\x`) },
			Out:  "Volume{452e318a-5cde-421e-9831-b9853c521012}\\\r\n", Want: vol,
			Script: scriptFromTarget, Env: []string{`targetpath=C:\var\lib\kubelet\x`},
		},
		"GetClosestVolumeIDFromTargetPath": {
			Call: func(p PowerShell) (any, error) {
				return p.GetClosestVolumeIDFromTargetPath(ctx, `C:\var\lib\kubelet\x`)
			},
			Out: vol + "\r\n", Want: vol, Script: scriptClosest, Env: []string{`targetpath=C:\var\lib\kubelet\x`},
		},
		"WriteVolumeCache": {
			Call:   func(p PowerShell) (any, error) { return nil, p.WriteVolumeCache(ctx, vol) },
			Script: scriptWriteCache, Env: []string{"volumeid=" + vol},
		},
	}
	runnertest.Run(t, cases, func(r runner.Runner) PowerShell { return PowerShell{Runner: r} })
}

func TestTargetNotAVolume(t *testing.T) {
	f := &runner.Fake{Respond: func(runner.Command) ([]byte, error) { return []byte(`\\srv\share\`), nil }}
	_, err := PowerShell{Runner: f}.GetVolumeIDFromTargetPath(context.Background(), `C:\x`)
	if err == nil || err.Error() != `C:\x links to \\srv\share\, not to a volume` {
		t.Fatalf("err = %v", err)
	}
	var link *LinkError
	if !errors.As(err, &link) || link.Path != `C:\x` || link.Target != `\\srv\share\` {
		t.Fatalf("err = %#v, want a *LinkError naming the path and its target", err)
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
