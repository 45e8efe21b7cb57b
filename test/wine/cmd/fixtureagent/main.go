//go:build windows

// Command fixtureagent is pipeguard-agent for the tests under Wine
// (test/wine), which build it as pipeguard-agent-fixture.exe: the agent's
// own command (app.NewCommand: the same flags, servers, guard and audit
// log), whose host calls go to a fixture described in a JSON file
// (PIPEGUARD_WIN32_FIXTURE) through app.Fixture. Wine has no disks,
// volumes, mount points or symbolic links of a node (win32.go), nor the
// storage, SMB and iSCSI classes of WMI (wmi.go). It refuses to start,
// with exit code 2, without a well-formed fixture file. Never run it on a
// node; pipeguard-agent has no fixture.
package main

import (
	"context"
	"os"

	"github.com/pipeguard/pipeguard/cmd/pipeguard-agent/app"
)

func main() {
	cmd := app.NewCommand(context.Background())
	cmd.Fixture = app.Fixture{Win32: loadWin32Fixture, WMI: loadWMIFixture}
	os.Exit(cmd.Execute(os.Args[1:]))
}
