package disk

import (
	"context"
	"reflect"
	"testing"

	"github.com/pipeguard/pipeguard/agent/hostops/runner"
)

// Disk numbers are integers formatted by the agent: the only values that
// reach these commands, so the injection surface is nil by type. The tests
// pin the exact commands and the parsing of recorded output.
func TestCommands(t *testing.T) {
	ctx := context.Background()
	cases := map[string]struct {
		call   func(PowerShell) (any, error)
		out    string
		script string
		env    []string
		want   any
	}{
		"ListDiskLocations": {
			call: func(p PowerShell) (any, error) { return p.ListDiskLocations(ctx) },
			out: `[{"Number":0,"Location":"PCIROOT(0)#PCI(0100)#ATA(C00T00L00)"},` +
				`{"Number":1,"Location":"Integrated : Adapter 3 : Port 0 : Target 0 : LUN 1"},` +
				`{"Number":2,"Location":"Integrated : Adapter 1 : Port 2 : Target 3 : LUN 4"}]`,
			want: map[uint32]Location{
				1: {Adapter: "3", Bus: "0", Target: "0", LUNID: "1"},
				2: {Adapter: "1", Bus: "2", Target: "3", LUNID: "4"},
			},
			script: scriptListLocations,
		},
		"ListDiskLocations one disk": {
			call:   func(p PowerShell) (any, error) { return p.ListDiskLocations(ctx) },
			out:    `{"Number":1,"Location":"Integrated : Adapter 3 : Port 0 : Target 0 : LUN 1"}`,
			want:   map[uint32]Location{1: {Adapter: "3", Bus: "0", Target: "0", LUNID: "1"}},
			script: scriptListLocations,
		},
		"PartitionDisk": {
			call:   func(p PowerShell) (any, error) { return nil, p.PartitionDisk(ctx, 7) },
			script: scriptPartition, env: []string{"disknumber=7"},
		},
		"Rescan": {call: func(p PowerShell) (any, error) { return nil, p.Rescan(ctx) }, script: scriptRescan},
		"ListDiskIDs": {
			call:   func(p PowerShell) (any, error) { return p.ListDiskIDs(ctx) },
			out:    `[{"Number":0,"UniqueId":"6002248071ADCE8A","SerialNumber":" AB12 "},{"Number":1,"UniqueId":"{1}","SerialNumber":null}]`,
			want:   map[uint32]IDs{0: {Page83: "6002248071ADCE8A", SerialNumber: "AB12"}, 1: {Page83: "{1}"}},
			script: scriptListIDs,
		},
		"GetDiskStats": {
			call: func(p PowerShell) (any, error) { return p.GetDiskStats(ctx, 2) },
			out:  "10737418240\r\n", want: int64(10737418240),
			script: scriptSize, env: []string{"disknumber=2"},
		},
		"SetDiskState online": {
			call:   func(p PowerShell) (any, error) { return nil, p.SetDiskState(ctx, 2, true) },
			script: scriptSetState, env: []string{"disknumber=2", "diskoffline=false"},
		},
		"GetDiskState": {
			call: func(p PowerShell) (any, error) { return p.GetDiskState(ctx, 4294967295) },
			out:  "True\r\n", want: false,
			script: scriptGetState, env: []string{"disknumber=4294967295"},
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

func TestUnparsableOutput(t *testing.T) {
	f := &runner.Fake{Respond: func(runner.Command) ([]byte, error) { return []byte("n/a"), nil }}
	if _, err := (PowerShell{Runner: f}).GetDiskStats(context.Background(), 1); err == nil {
		t.Fatal("garbage size parsed")
	}
}
