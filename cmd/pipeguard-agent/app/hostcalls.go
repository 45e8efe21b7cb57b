package app

// The deadlines, caps and workers of the agent's host calls.

import (
	"fmt"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	sysgroup "github.com/pipeguard/pipeguard/agent/groups/system"
	hostdisk "github.com/pipeguard/pipeguard/agent/hostops/disk"
	hostiscsi "github.com/pipeguard/pipeguard/agent/hostops/iscsi"
	"github.com/pipeguard/pipeguard/agent/hostops/limits"
	"github.com/pipeguard/pipeguard/agent/hostops/runner"
	hostsmb "github.com/pipeguard/pipeguard/agent/hostops/smb"
	hostsys "github.com/pipeguard/pipeguard/agent/hostops/system"
	hostvol "github.com/pipeguard/pipeguard/agent/hostops/volume"
)

// DefaultLimits are the default limits of the host calls of each Windows
// group, as each group declares them (e.g. disk.Limits). The filesystem
// group starts no process and has none.
var DefaultLimits = map[string]limits.Limits{
	"disk":   hostdisk.Limits,
	"volume": hostvol.Limits,
	"smb":    hostsmb.Limits,
	"iscsi":  hostiscsi.Limits,
	"system": hostsys.Limits,
}

// DefaultFormatConcurrency is how many volume Format-Volume and
// Resize-Partition calls run at once by default.
const DefaultFormatConcurrency = hostvol.DefaultFormatConcurrency

// powerShellWorkers returns the pool of PowerShell workers that runs the
// cmdlets of every Windows group on Windows, or nil when o.Runner replaces
// it or the agent does not run on Windows.
func powerShellWorkers(o Options, reg prometheus.Registerer) (*runner.Workers, error) {
	if o.Runner != nil || o.GOOS != "windows" {
		return nil, nil
	}
	w, err := runner.NewWorkers(runner.WorkerOptions{Size: o.PowerShellWorkers, Log: o.Log.WithName("powershell"), Registerer: reg, Setting: "--powershell-workers"})
	if err != nil {
		return nil, fmt.Errorf("PowerShell workers (--powershell-workers): %w", err)
	}
	return w, nil
}

// hostCallTimeout is the deadline of the host calls of group.
func hostCallTimeout(o Options, group string) time.Duration {
	if timeout, ok := o.HostCallTimeouts[group]; ok {
		return timeout
	}
	return DefaultLimits[group].Timeout
}

// boundRunner gives the host calls of group their deadline and caps: the
// group's timeout and its default cap (DefaultLimits), and for the volume group's
// format and resize calls the same timeout and FormatConcurrency.
func boundRunner(o Options, run runner.Runner, group string) *runner.Bounded {
	timeout := hostCallTimeout(o, group)
	setting := "--host-call-timeout-" + group
	l := limits.Limits{Timeout: timeout, Concurrency: DefaultLimits[group].Concurrency, Setting: setting}
	if group != "volume" {
		return runner.Bound(run, group, l)
	}
	formats := o.FormatConcurrency
	if formats <= 0 {
		formats = DefaultFormatConcurrency
	}
	// The format slots are not split between callers: with the default 2,
	// keeping one back would halve a driver's formats. A caller's formats
	// still count against its share of the PowerShell workers.
	return runner.Bound(run, group, l, limits.Class{Ops: hostvol.FormatOps,
		Limits: limits.Limits{Timeout: timeout, Concurrency: formats, CallerShare: formats, Setting: setting + ", --format-concurrency"}})
}

// systemHost is o.System, else the service control manager's operations
// under the system group's limits, which start and stop with a service
// only the allowed services.
func systemHost(o Options, run runner.Runner) hostsys.API {
	if o.System != nil {
		return o.System
	}
	return hostsys.Native{Limits: boundRunner(o, run, "system"), MayStop: allowedService(o.AllowedServices), MayStart: allowedService(o.AllowedServices),
		AllowSetting: "--allowed-service"}
}

// allowedService is sysgroup.Allowed over allowed: StopService with force
// may stop the services that depend on the one stopped only if the system
// group would allow them too.
func allowedService(allowed []string) func(name string) bool {
	return func(name string) bool { return sysgroup.Allowed(allowed, name) }
}
