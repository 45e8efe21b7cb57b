package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime"

	"github.com/pipeguard/pipeguard/agent/compare"
	"github.com/pipeguard/pipeguard/cmd/pipeguard-agent/flagname"
)

// The seams of pipeguard-agent compare: where CSI Proxy's answers and
// pipeguard's come from. Tests replace them; off Windows dialCSIProxy
// answers compare.ErrNeedsWindows.
var (
	dialCSIProxy = compare.DialCSIProxy
	localSide    = func(kubeletPath string) (compare.Conns, error) {
		o := compare.LocalOptions{KubeletPath: kubeletPath}
		if win32Fixture != nil {
			sys, err := win32Fixture()
			if err != nil {
				return compare.Conns{}, fmt.Errorf("the Win32 fixture of this test build: %w", err)
			}
			o.Win32 = sys
		}
		return compare.Local(o)
	}
)

// compareUsage is the first line of pipeguard-agent compare -h.
const compareUsage = `usage: pipeguard-agent compare [-o table|json] [--timeout 30s] [--kubelet-path DIR] [--pipe-prefix csi-proxy-] [--service NAME]...

Asks CSI Proxy, on its named pipes, and pipeguard, in this process, the same
read-only questions and prints where their answers differ. It never calls a
method that changes the host. Exit status: 0 when the answers are the same,
1 when they differ, 2 on bad usage or when CSI Proxy cannot be reached.
`

// runCompare is pipeguard-agent compare (docs/install.md).
func runCompare(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("pipeguard-agent compare", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprint(stderr, compareUsage)
		fs.PrintDefaults()
	}
	output := fs.String("o", "table", "output format: table or json")
	timeout := fs.Duration("timeout", compare.DefaultTimeout, "deadline of each call, on each side")
	kubelet := fs.String("kubelet-path", defaultKubeletPath(), "kubelet root directory: asked about with PathExists and walked for target paths")
	prefix := fs.String("pipe-prefix", compare.DefaultPipePrefix, `prefix of CSI Proxy's pipe names, \\.\pipe\<prefix><group>-<version>`)
	var services stringList
	fs.Var(&services, "service", fmt.Sprintf("a Windows service to ask GetService about; repeatable (default %v)", compare.DefaultServices))
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	switch {
	case fs.NArg() > 0:
		fmt.Fprintf(stderr, "pipeguard-agent compare: unexpected argument %q\n", fs.Arg(0))
		return 2
	case *output != "table" && *output != "json":
		fmt.Fprintf(stderr, "pipeguard-agent compare: -o %q: give table or json\n", *output)
		return 2
	case *timeout <= 0:
		fmt.Fprintf(stderr, "pipeguard-agent compare: --timeout %s: must be positive\n", *timeout)
		return 2
	case *kubelet == "":
		fmt.Fprintln(stderr, "pipeguard-agent compare: --kubelet-path is empty")
		return 2
	}

	csi, err := dialCSIProxy(*prefix)
	if err != nil {
		if errors.Is(err, compare.ErrNeedsWindows) {
			fmt.Fprintf(stderr, "%v (this is %s); run it on the Windows node, where CSI Proxy still runs\n", err, runtime.GOOS)
		} else {
			fmt.Fprintf(stderr, "pipeguard-agent compare: %v\n", err)
		}
		return 2
	}
	defer closeConns(csi)
	pg, err := localSide(*kubelet)
	if err != nil {
		fmt.Fprintf(stderr, "pipeguard-agent compare: pipeguard's side: %v\n", err)
		return 2
	}
	defer closeConns(pg)

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	paths, notes := compare.FindMountPoints(*kubelet)
	report := compare.Compare(ctx, csi, pg, compare.Options{Timeout: *timeout, KubeletPath: *kubelet, TargetPaths: paths, Services: services, Namer: flagname.Of})
	report.Notes = append(notes, report.Notes...)
	write := compare.WriteTable
	if *output == "json" {
		write = compare.WriteJSON
	}
	if err := write(stdout, report); err != nil {
		fmt.Fprintf(stderr, "pipeguard-agent compare: writing the report: %v\n", err)
		return 2
	}
	if len(report.Unreachable) > 0 {
		fmt.Fprintf(stderr, "pipeguard-agent compare: CSI Proxy could not be reached for %d of %d calls (first: %s): is CSI Proxy running? (sc.exe query csiproxy)\n", len(report.Unreachable), report.Calls, report.Unreachable[0])
		return 2
	}
	if ctx.Err() != nil {
		fmt.Fprintln(stderr, "pipeguard-agent compare: interrupted; the report is incomplete")
		return 2
	}
	if !report.Identical {
		return 1
	}
	return 0
}

func closeConns(c compare.Conns) {
	if c.Close != nil {
		c.Close()
	}
}
