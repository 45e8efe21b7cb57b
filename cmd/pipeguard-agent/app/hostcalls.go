package app

// The deadlines and caps of the agent's host calls, and their WMI connection.

import (
	"fmt"
	"time"

	sysgroup "github.com/pipeguard/pipeguard/agent/groups/system"
	hostdisk "github.com/pipeguard/pipeguard/agent/hostops/disk"
	hostiscsi "github.com/pipeguard/pipeguard/agent/hostops/iscsi"
	"github.com/pipeguard/pipeguard/agent/hostops/limits"
	hostsmb "github.com/pipeguard/pipeguard/agent/hostops/smb"
	hostsys "github.com/pipeguard/pipeguard/agent/hostops/system"
	hostvol "github.com/pipeguard/pipeguard/agent/hostops/volume"
	"github.com/pipeguard/pipeguard/agent/hostops/wmi"
	"github.com/pipeguard/pipeguard/cmd/pipeguard-agent/flagname"
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

// DefaultFormatConcurrency is how many volume formats (MSFT_Volume.Format)
// and resizes (MSFT_Partition.Resize) run at once by default.
const DefaultFormatConcurrency = hostvol.DefaultFormatConcurrency

// hostConn is o.WMI, else the host's WMI service on Windows (wmi.New,
// which connects on the first call) and elsewhere a Conn that refuses
// every call.
func hostConn(o Options) (wmi.Conn, error) {
	if o.WMI != nil {
		return o.WMI, nil
	}
	if o.GOOS != "windows" {
		return wmi.Unsupported{GOOS: o.GOOS}, nil
	}
	c, err := wmi.New()
	if err != nil {
		return nil, fmt.Errorf("the host's WMI service: %w", err)
	}
	return c, nil
}

// hostCallTimeout is the deadline of the host calls of group.
func hostCallTimeout(o Options, group string) time.Duration {
	if timeout, ok := o.HostCallTimeouts[group]; ok {
		return timeout
	}
	return DefaultLimits[group].Timeout
}

// bound gives the host calls of group their deadline and caps: the
// group's timeout and its default cap (DefaultLimits), and for the volume group's
// format and resize calls the same timeout and FormatConcurrency.
func bound(o Options, group string) *limits.Bounded {
	timeout := hostCallTimeout(o, group)
	setting := "--host-call-timeout-" + group
	l := limits.Limits{Timeout: timeout, Concurrency: DefaultLimits[group].Concurrency, Setting: setting}
	if group != "volume" {
		return limits.Bound(group, l)
	}
	formats := o.FormatConcurrency
	if formats <= 0 {
		formats = DefaultFormatConcurrency
	}
	// The format slots are not split between callers: with the default 2,
	// keeping one back would halve a driver's formats. A caller's formats
	// still count against its share of the group's slots.
	return limits.Bound(group, l, limits.Class{Ops: hostvol.FormatOps(),
		Limits: limits.Limits{Timeout: timeout, Concurrency: formats, CallerShare: formats, Setting: setting + ", --format-concurrency"}})
}

// systemHost is o.System, else the service control manager's operations
// under the system group's limits, which start and stop with a service
// only the allowed services.
func systemHost(o Options) hostsys.API {
	if o.System != nil {
		return o.System
	}
	return hostsys.Native{Limits: bound(o, "system"), MayStop: allowedService(o.AllowedServices), MayStart: allowedService(o.AllowedServices),
		Namer: flagname.Of}
}

// allowedService is sysgroup.Allowed over allowed: StopService with force
// may stop the services that depend on the one stopped only if the system
// group would allow them too.
func allowedService(allowed []string) func(name string) bool {
	return func(name string) bool { return sysgroup.Allowed(allowed, name) }
}
