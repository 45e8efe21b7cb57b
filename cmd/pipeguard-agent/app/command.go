package app

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/funcr"

	"github.com/pipeguard/pipeguard/agent/compare"
	"github.com/pipeguard/pipeguard/agent/hostops/win32"
	"github.com/pipeguard/pipeguard/agent/hostops/wmi"
	"github.com/pipeguard/pipeguard/cmd/pipeguard-agent/flagname"
	"github.com/pipeguard/pipeguard/internal/option"
	"github.com/pipeguard/pipeguard/internal/version"
)

// Command is pipeguard-agent: Execute runs it on its arguments.
type Command struct {
	// Stdout and Stderr are the command's output; NewCommand sets them to
	// the process's.
	Stdout, Stderr io.Writer
	// Fixture, when set, answers the agent's host calls in place of the
	// machine. pipeguard-agent leaves it empty.
	Fixture Fixture

	ctx context.Context
	// run runs the agent with the options the command line gave, once
	// they are valid and complete, and returns the exit code: runAgent,
	// or a test's.
	run func(ctx context.Context, o *CommandOptions) int
	// The seams of pipeguard-agent compare: where CSI Proxy's answers and
	// pipeguard's come from (compare.go).
	dialCSIProxy func(prefix string) (compare.Conns, error)
	localSide    func(kubeletPath string) (compare.Conns, error)
}

// Fixture gives the agent a test's host in place of the machine's: the
// build of the agent for the tests under Wine (test/wine/cmd/fixtureagent)
// sets it, since Wine has neither the disks and volumes of a node nor the
// storage, SMB and iSCSI classes of WMI. Each function is called once the
// command line is valid, before the agent starts; when one fails, the
// agent does not start and exits with 2. The agent logs that its calls go
// to a fixture.
type Fixture struct {
	// Win32 gives the Win32 calls of the disk, volume and smb groups
	// (Options.Win32), and those of pipeguard's side of compare.
	Win32 func() (win32.Sys, error)
	// WMI gives the WMI connection of the disk, volume, smb and iscsi
	// groups (Options.WMI).
	WMI func() (wmi.Conn, error)
}

// NewCommand returns pipeguard-agent, which runs until ctx is done (or
// SIGTERM, Ctrl-C, or, as a Windows service, until the service is
// stopped).
func NewCommand(ctx context.Context) *Command {
	c := &Command{Stdout: os.Stdout, Stderr: os.Stderr, ctx: ctx, dialCSIProxy: compare.DialCSIProxy}
	c.run = c.runAgent
	c.localSide = c.compareLocal
	return c
}

// Execute runs pipeguard-agent compare when args start with compare, and
// otherwise parses the agent's flags and runs the agent; it returns the
// exit code: 2 for bad flags, 0 for -h and --version, and otherwise the
// agent's (see serve).
func (c *Command) Execute(args []string) int {
	if len(args) > 0 && args[0] == "compare" {
		return c.compare(args[1:])
	}
	fs := flag.NewFlagSet("pipeguard-agent", flag.ContinueOnError)
	fs.SetOutput(c.Stderr)
	o := &CommandOptions{}
	o.AddFlags(fs)
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(c.Stderr, "pipeguard-agent takes no arguments, got %q\n", fs.Args())
		return 2
	}
	if err := o.Validate(); err != nil {
		fmt.Fprintln(c.Stderr, err)
		return 2
	}
	if o.set("powershell-workers") {
		fmt.Fprintln(c.Stderr, "warning: --powershell-workers is deprecated and has no effect: the agent starts no PowerShell; remove the flag")
	}
	if o.ShowVersion {
		fmt.Fprintln(c.Stdout, "pipeguard-agent", version.Get())
		return 0
	}
	o.Complete()
	return c.run(c.ctx, o)
}

// runAgent opens the log file, when there is one, and serves until the
// context is done, SIGTERM or Ctrl-C, or, as a Windows service, until the
// service is stopped.
func (c *Command) runAgent(ctx context.Context, o *CommandOptions) int {
	stderr := c.Stderr
	if o.LogFile != "" {
		f, err := os.OpenFile(o.LogFile, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o640)
		if err != nil {
			fmt.Fprintf(stderr, "--log-file: %v\n", err)
			return 2
		}
		defer f.Close()
		stderr = f
	}
	if o.WindowsService {
		return runAsService(o.ServiceName, func(ctx context.Context) int { return c.serve(ctx, o.Config, o.Verbosity, stderr) }, stderr)
	}
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	return c.serve(ctx, o.Config, o.Verbosity, stderr)
}

// serve runs the agent until ctx is done and returns the exit code: 2 for a
// configuration it cannot start with, 1 when it cannot listen or serve.
func (c *Command) serve(ctx context.Context, cfg Config, verbosity int, stderr io.Writer) int {
	log := newLogger(stderr, verbosity)
	cfg.Agent.Log = log
	if c.Fixture.Win32 != nil {
		sys, err := c.Fixture.Win32()
		if err != nil {
			log.Error(err, "invalid configuration: the Win32 fixture of this test build could not be loaded")
			return 2
		}
		log.Info("test build: the Win32 calls of the disk, volume and smb groups go to a fixture, not only to this machine; never run this build on a node")
		cfg.Agent.Win32 = sys
	}
	if c.Fixture.WMI != nil {
		conn, err := c.Fixture.WMI()
		if err != nil {
			log.Error(err, "invalid configuration: the WMI fixture of this test build could not be loaded")
			return 2
		}
		log.Info("test build: the WMI calls of the disk, volume, smb and iscsi groups go to a fixture, not to this machine; never run this build on a node")
		cfg.Agent.WMI = conn
	}
	err := Run(ctx, cfg, nil)
	if err == nil {
		return 0
	}
	var oe *OptionError
	if errors.As(err, &oe) {
		log.Error(flagError{err}, "invalid configuration")
		return 2
	}
	log.Error(flagError{err}, "the agent stopped")
	return 1
}

// flagError is an error whose message names the agent's options by the
// flags that set them: the options Run rejects (an *OptionError) and
// those the agent's packages name in their messages (an *option.Error),
// wherever they are wrapped.
type flagError struct{ err error }

func (e flagError) Error() string { return option.Message(e.err, flagname.Of) }
func (e flagError) Unwrap() error { return e.err }

func newLogger(w io.Writer, verbosity int) logr.Logger {
	return funcr.NewJSON(func(obj string) { fmt.Fprintln(w, obj) }, funcr.Options{
		LogTimestamp: true,
		Verbosity:    verbosity,
	}).WithName("pipeguard-agent")
}
