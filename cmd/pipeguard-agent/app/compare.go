package app

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"runtime"
	"time"

	"github.com/pipeguard/pipeguard/agent/compare"
	"github.com/pipeguard/pipeguard/cmd/pipeguard-agent/flagname"
)

// compareUsage is the first line of pipeguard-agent compare -h.
const compareUsage = `usage: pipeguard-agent compare [-o table|json] [--timeout 30s] [--kubelet-path DIR] [--pipe-prefix csi-proxy-] [--service NAME]...

Asks CSI Proxy, on its named pipes, and pipeguard, in this process, the same
read-only questions and prints where their answers differ. It never calls a
method that changes the host. Exit status: 0 when the answers are the same,
1 when they differ, 2 on bad usage or when CSI Proxy cannot be reached.
`

// CompareOptions is the command line of pipeguard-agent compare
// (docs/install.md).
type CompareOptions struct {
	// Output is the report's format: table or json.
	Output string
	// Timeout is the deadline of each call, on each side.
	Timeout     time.Duration
	KubeletPath string
	// PipePrefix is the prefix of CSI Proxy's pipe names.
	PipePrefix string
	// Services are the Windows services asked about; none:
	// compare.DefaultServices.
	Services []string
}

// AddFlags adds the flags of pipeguard-agent compare to fs, bound to o.
func (o *CompareOptions) AddFlags(fs *flag.FlagSet) {
	fs.StringVar(&o.Output, "o", "table", "output format: table or json")
	fs.DurationVar(&o.Timeout, "timeout", compare.DefaultTimeout, "deadline of each call, on each side")
	fs.StringVar(&o.KubeletPath, "kubelet-path", defaultKubeletPath(), "kubelet root directory: asked about with PathExists and walked for target paths")
	fs.StringVar(&o.PipePrefix, "pipe-prefix", compare.DefaultPipePrefix, `prefix of CSI Proxy's pipe names, \\.\pipe\<prefix><group>-<version>`)
	fs.Var((*stringList)(&o.Services), "service", fmt.Sprintf("a Windows service to ask GetService about; repeatable (default %v)", compare.DefaultServices))
}

// Validate checks the flags, and returns the first problem as the message
// the user reads after "pipeguard-agent compare: ".
func (o *CompareOptions) Validate() error {
	switch {
	case o.Output != "table" && o.Output != "json":
		return fmt.Errorf("-o %q: give table or json", o.Output)
	case o.Timeout <= 0:
		return fmt.Errorf("--timeout %s: must be positive", o.Timeout)
	case o.KubeletPath == "":
		return errors.New("--kubelet-path is empty")
	}
	return nil
}

// compare is pipeguard-agent compare: it returns 0 when both sides answer
// the same, 1 when they differ, 2 on bad usage or when CSI Proxy cannot be
// reached.
func (c *Command) compare(args []string) int {
	stderr := c.Stderr
	fs := flag.NewFlagSet("pipeguard-agent compare", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprint(stderr, compareUsage)
		fs.PrintDefaults()
	}
	var o CompareOptions
	o.AddFlags(fs)
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "pipeguard-agent compare: unexpected argument %q\n", fs.Arg(0))
		return 2
	}
	if err := o.Validate(); err != nil {
		fmt.Fprintf(stderr, "pipeguard-agent compare: %v\n", err)
		return 2
	}
	return c.runCompare(o)
}

// runCompare asks both sides and writes the report.
func (c *Command) runCompare(o CompareOptions) int {
	stderr := c.Stderr
	csi, err := c.dialCSIProxy(o.PipePrefix)
	if err != nil {
		if errors.Is(err, compare.ErrNeedsWindows) {
			fmt.Fprintf(stderr, "%v (this is %s); run it on the Windows node, where CSI Proxy still runs\n", err, runtime.GOOS)
		} else {
			fmt.Fprintf(stderr, "pipeguard-agent compare: %v\n", err)
		}
		return 2
	}
	defer closeConns(csi)
	pg, err := c.localSide(o.KubeletPath)
	if err != nil {
		fmt.Fprintf(stderr, "pipeguard-agent compare: pipeguard's side: %v\n", err)
		return 2
	}
	defer closeConns(pg)

	ctx, stop := signal.NotifyContext(c.ctx, os.Interrupt)
	defer stop()
	paths, notes := compare.FindMountPoints(o.KubeletPath)
	report := compare.Compare(ctx, csi, pg, compare.Options{Timeout: o.Timeout, KubeletPath: o.KubeletPath, TargetPaths: paths, Services: o.Services, Namer: flagname.Of})
	report.Notes = append(notes, report.Notes...)
	write := compare.WriteTable
	if o.Output == "json" {
		write = compare.WriteJSON
	}
	if err := write(c.Stdout, report); err != nil {
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

// compareLocal is pipeguard's side of compare: its host operations in this
// process, over the Fixture's Win32 calls when it has them.
func (c *Command) compareLocal(kubeletPath string) (compare.Conns, error) {
	o := compare.LocalOptions{KubeletPath: kubeletPath}
	if c.Fixture.Win32 != nil {
		sys, err := c.Fixture.Win32()
		if err != nil {
			return compare.Conns{}, fmt.Errorf("the Win32 fixture of this test build: %w", err)
		}
		o.Win32 = sys
	}
	return compare.Local(o)
}

func closeConns(c compare.Conns) {
	if c.Close != nil {
		c.Close()
	}
}
