// Command pipeguard-agent serves the CSI Proxy API groups on the node, on the
// same named pipes as CSI Proxy, with every path confined to the kubelet path
// and the working dirs. See docs/agent.md.
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/pipeguard/pipeguard/internal/version"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stderr))
}

// run runs pipeguard-agent compare when args start with compare, and
// otherwise parses the flags, then runs the agent until SIGTERM or Ctrl-C (or, as a
// Windows service, until the service is stopped), and returns the exit code.
func run(args []string, stderr io.Writer) int {
	if len(args) > 0 && args[0] == "compare" {
		return runCompare(args[1:], os.Stdout, stderr)
	}
	cfg, code, ok := parseFlags(args, stderr)
	if !ok {
		return code
	}
	if cfg.showVersion {
		fmt.Fprintln(os.Stdout, "pipeguard-agent", version.Get())
		return 0
	}
	if cfg.logFile != "" {
		f, err := os.OpenFile(cfg.logFile, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o640)
		if err != nil {
			fmt.Fprintf(stderr, "--log-file: %v\n", err)
			return 2
		}
		defer f.Close()
		stderr = f
	}
	if cfg.windowsService {
		return runAsService(cfg.serviceName, func(ctx context.Context) int { return serve(ctx, cfg, stderr, nil) }, stderr)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	return serve(ctx, cfg, stderr, nil)
}
