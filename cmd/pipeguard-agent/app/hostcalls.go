package app

// The deadlines, caps and workers of the agent's host calls.

import (
	"fmt"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/pipeguard/pipeguard/agent/hostops/limits"
	"github.com/pipeguard/pipeguard/agent/hostops/runner"
)

// powerShellWorkers returns the pool of PowerShell workers that runs the
// cmdlets of every Windows group on Windows, or nil when o.Runner replaces
// it or the agent does not run on Windows.
func powerShellWorkers(o Options, reg prometheus.Registerer) (*runner.Workers, error) {
	if o.Runner != nil || o.GOOS != "windows" {
		return nil, nil
	}
	w, err := runner.NewWorkers(runner.WorkerOptions{Size: o.PowerShellWorkers, Log: o.Log.WithName("powershell"), Registerer: reg})
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
	return limits.DefaultTimeouts[group]
}

// boundRunner gives the host calls of group their deadline and caps: the
// group's timeout and limits.DefaultConcurrency, and for the volume group's
// format and resize calls the same timeout and FormatConcurrency.
func boundRunner(o Options, run runner.Runner, group string) *runner.Bounded {
	timeout := hostCallTimeout(o, group)
	setting := "--host-call-timeout-" + group
	l := limits.Limits{Timeout: timeout, Concurrency: limits.DefaultConcurrency, Setting: setting}
	if group != "volume" {
		return runner.Bound(run, group, l)
	}
	formats := o.FormatConcurrency
	if formats <= 0 {
		formats = limits.DefaultFormatConcurrency
	}
	// The format slots are not split between callers: with the default 2,
	// keeping one back would halve a driver's formats. A caller's formats
	// still count against its share of the PowerShell workers.
	return runner.Bound(run, group, l, limits.Class{Ops: limits.FormatOps,
		Limits: limits.Limits{Timeout: timeout, Concurrency: formats, CallerShare: formats, Setting: setting + ", --format-concurrency"}})
}
