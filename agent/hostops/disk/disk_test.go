package disk

import (
	"context"
	"testing"

	"github.com/pipeguard/pipeguard/agent/hostops/runner"
	"github.com/pipeguard/pipeguard/agent/hostops/runner/runnertest"
)

// Disk numbers are integers formatted by the agent: the only values that
// reach these commands, so the injection surface is nil by type. The tests
// pin the exact commands and the parsing of their output.
func TestCommands(t *testing.T) {
	ctx := context.Background()
	cases := map[string]runnertest.Case[PowerShell]{
		"PartitionDisk": {
			Call:   func(p PowerShell) (any, error) { return nil, p.PartitionDisk(ctx, 7) },
			Script: scriptPartition, Env: []string{"disknumber=7"},
		},
		"Rescan": {Call: func(p PowerShell) (any, error) { return nil, p.Rescan(ctx) }, Script: scriptRescan},
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
	f := &runnertest.Fake{Respond: func(runner.Command) ([]byte, error) { return []byte("n/a"), nil }}
	if _, err := (PowerShell{Runner: f}).GetDiskState(context.Background(), 1); err == nil {
		t.Fatal("garbage state parsed")
	}
}
