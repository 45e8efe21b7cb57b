package disk

import (
	"context"
	"testing"

	"github.com/pipeguard/pipeguard/agent/hostops/runner"
	"github.com/pipeguard/pipeguard/agent/hostops/runner/runnertest"
)

// Disk numbers are integers formatted by the agent: the only values that
// reach these commands, so the injection surface is nil by type. The tests
// pin the exact commands and the parsing of recorded output.
func TestCommands(t *testing.T) {
	ctx := context.Background()
	cases := map[string]runnertest.Case[PowerShell]{
		"ListDiskLocations": {
			Call: func(p PowerShell) (any, error) { return p.ListDiskLocations(ctx) },
			Out: `[{"Number":0,"Location":"PCIROOT(0)#PCI(0100)#ATA(C00T00L00)"},` +
				`{"Number":1,"Location":"Integrated : Adapter 3 : Port 0 : Target 0 : LUN 1"},` +
				`{"Number":2,"Location":"Integrated : Adapter 1 : Port 2 : Target 3 : LUN 4"}]`,
			Want: map[uint32]Location{
				1: {Adapter: "3", Bus: "0", Target: "0", LUNID: "1"},
				2: {Adapter: "1", Bus: "2", Target: "3", LUNID: "4"},
			},
			Script: scriptListLocations,
		},
		"ListDiskLocations one disk": {
			Call:   func(p PowerShell) (any, error) { return p.ListDiskLocations(ctx) },
			Out:    `{"Number":1,"Location":"Integrated : Adapter 3 : Port 0 : Target 0 : LUN 1"}`,
			Want:   map[uint32]Location{1: {Adapter: "3", Bus: "0", Target: "0", LUNID: "1"}},
			Script: scriptListLocations,
		},
		"PartitionDisk": {
			Call:   func(p PowerShell) (any, error) { return nil, p.PartitionDisk(ctx, 7) },
			Script: scriptPartition, Env: []string{"disknumber=7"},
		},
		"Rescan": {Call: func(p PowerShell) (any, error) { return nil, p.Rescan(ctx) }, Script: scriptRescan},
		"ListDiskIDs": {
			Call:   func(p PowerShell) (any, error) { return p.ListDiskIDs(ctx) },
			Out:    `[{"Number":0,"UniqueId":"6002248071ADCE8A","SerialNumber":" AB12 "},{"Number":1,"UniqueId":"{1}","SerialNumber":null}]`,
			Want:   map[uint32]IDs{0: {Page83: "6002248071ADCE8A", SerialNumber: "AB12"}, 1: {Page83: "{1}"}},
			Script: scriptListIDs,
		},
		"GetDiskStats": {
			Call: func(p PowerShell) (any, error) { return p.GetDiskStats(ctx, 2) },
			Out:  "10737418240\r\n", Want: int64(10737418240),
			Script: scriptSize, Env: []string{"disknumber=2"},
		},
		"SetDiskState online": {
			Call:   func(p PowerShell) (any, error) { return nil, p.SetDiskState(ctx, 2, true) },
			Script: scriptSetState, Env: []string{"disknumber=2", "diskoffline=false"},
		},
		"GetDiskState": {
			Call: func(p PowerShell) (any, error) { return p.GetDiskState(ctx, 4294967295) },
			Out:  "True\r\n", Want: false,
			Script: scriptGetState, Env: []string{"disknumber=4294967295"},
		},
	}
	runnertest.Run(t, cases, func(r runner.Runner) PowerShell { return PowerShell{Runner: r} })
}

func TestUnparsableOutput(t *testing.T) {
	f := &runner.Fake{Respond: func(runner.Command) ([]byte, error) { return []byte("n/a"), nil }}
	if _, err := (PowerShell{Runner: f}).GetDiskStats(context.Background(), 1); err == nil {
		t.Fatal("garbage size parsed")
	}
}
