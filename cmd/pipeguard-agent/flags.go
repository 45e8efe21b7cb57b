package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"runtime"
	"strings"

	"github.com/pipeguard/pipeguard/agent"
	"github.com/pipeguard/pipeguard/agent/listen"
	"github.com/pipeguard/pipeguard/agent/server"
)

// config is the parsed command line.
type config struct {
	agent          agent.Options
	verbosity      int
	windowsService bool
	serviceName    string
}

// stringList is a repeatable string flag.
type stringList []string

func (l *stringList) String() string { return strings.Join(*l, ",") }

func (l *stringList) Set(v string) error {
	if v == "" {
		return errors.New("empty value")
	}
	*l = append(*l, v)
	return nil
}

func defaultKubeletPath() string {
	if runtime.GOOS == "windows" {
		return `C:\var\lib\kubelet`
	}
	return "/var/lib/kubelet"
}

// parseFlags returns the config, or ok=false with the exit code when the
// agent must not start (bad flags: 2; -h: 0).
func parseFlags(args []string, stderr io.Writer) (cfg config, code int, ok bool) {
	fs := flag.NewFlagSet("pipeguard-agent", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var workingDirs, allowedServices stringList
	o := &cfg.agent

	// Flags shared with CSI Proxy.
	fs.StringVar(&o.KubeletPath, "kubelet-path", defaultKubeletPath(), "kubelet root directory; every path must lie inside it or a --working-dir")
	fs.Var(&workingDirs, "working-dir", "further directory paths may lie in (repeatable)")
	fs.StringVar(&o.MetricsBindAddress, "metrics-bind-address", "127.0.0.1:8888", `address serving Prometheus /metrics; "0" disables`)
	fs.BoolVar(&cfg.windowsService, "windows-service", false, "run as a Windows service")
	fs.BoolVar(&o.RequirePrivacy, "require-privacy", true, "SMB global mappings require encryption (New-SmbGlobalMapping -RequirePrivacy)")

	// pipeguard's own.
	fs.StringVar(&o.SocketDir, "socket-dir", "/run/pipeguard", "directory of the unix sockets standing in for the pipes (not Windows)")
	fs.Var(&allowedServices, "allowed-service", "Windows service that system StartService/StopService may touch (repeatable); none by default")
	fs.StringVar(&o.PipeSDDL, "pipe-sddl", listen.DefaultSDDL, "security descriptor (SDDL) of the named pipes (Windows)")
	fs.DurationVar(&o.ShutdownTimeout, "shutdown-timeout", server.DefaultShutdownTimeout, "how long shutdown waits for in-flight calls")
	fs.StringVar(&cfg.serviceName, "service-name", "pipeguard-agent", "Windows service name, with --windows-service")
	fs.IntVar(&cfg.verbosity, "v", 0, "log verbosity")

	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return cfg, 0, false
		}
		return cfg, 2, false
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "pipeguard-agent takes no arguments, got %q\n", fs.Args())
		return cfg, 2, false
	}
	o.WorkingDirs = workingDirs
	o.AllowedServices = allowedServices
	return cfg, 0, true
}
