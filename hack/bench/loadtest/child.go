package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strconv"
	"time"

	"github.com/go-logr/logr"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/pipeguard/pipeguard/hack/bench/internal/childproc"
	"github.com/pipeguard/pipeguard/hack/bench/internal/sysinfo"
)

// serveCommand is the name of the hidden subcommand that serves one target
// in a process of its own: loadtest re-executes itself with it, so that the
// load generator's timers and garbage collection stay out of the server's
// process and the RSS and CPU time measured are the server's alone.
const serveCommand = "serve"

// childStartTimeout bounds how long a server process may take to compile
// its policies and start listening.
const childStartTimeout = time.Minute

// serving is what a server process prints, as one JSON line on stdout,
// once it listens.
type serving struct {
	URL   string `json:"url"`
	CAPEM []byte `json:"caPEM"`
}

// serveArgs is the command line of a server process.
type serveArgs struct {
	target     string
	namespaces int
	policies   int
}

func parseServeFlags(args []string) (serveArgs, error) {
	fs := flag.NewFlagSet("loadtest "+serveCommand, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	var a serveArgs
	fs.StringVar(&a.target, "target", TargetPipeguard, targetNames)
	fs.IntVar(&a.namespaces, "namespaces", 20, "namespaces in the lookup")
	fs.IntVar(&a.policies, "policies", 0, "PipeAccessPolicies pipeguard loads")
	if err := fs.Parse(args); err != nil {
		return a, err
	}
	switch {
	case fs.NArg() > 0:
		return a, fmt.Errorf("unexpected arguments %q", fs.Args())
	case !knownTarget(a.target):
		return a, fmt.Errorf("--target %q is unknown; use %s", a.target, targetNames)
	case a.namespaces < 2 || a.namespaces > maxNamespaces:
		return a, fmt.Errorf("--namespaces %d is out of range; use 2 to %d", a.namespaces, maxNamespaces)
	case a.policies < 0 || a.policies > maxPolicies:
		return a, fmt.Errorf("--policies %d is out of range; use 0 to %d", a.policies, maxPolicies)
	}
	return a, nil
}

// serveMain runs a server process: it serves the target on a free
// loopback port, prints where (a serving line) and serves until stdin is
// closed, which the parent does to stop it and which also happens when
// the parent dies.
func serveMain(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	a, err := parseServeFlags(args)
	if err != nil {
		fmt.Fprintln(stderr, "loadtest serve:", err)
		return 2
	}
	ctrl.SetLogger(logr.Discard())
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	h, err := newHandler(ctx, a.target, namespaces(a.namespaces), a.policies)
	if err != nil {
		fmt.Fprintln(stderr, "loadtest serve:", err)
		return 1
	}
	srv, err := startServer(ctx, h)
	if err != nil {
		fmt.Fprintln(stderr, "loadtest serve: starting the webhook server:", err)
		return 1
	}
	line, _ := json.Marshal(serving{URL: srv.url, CAPEM: srv.caPEM})
	if _, err := fmt.Fprintf(stdout, "%s\n", line); err != nil {
		srv.stop()
		return 1
	}
	go func() {
		_, _ = io.Copy(io.Discard, stdin)
		stop()
	}()
	<-ctx.Done()
	if err := srv.stop(); err != nil {
		fmt.Fprintln(stderr, "loadtest serve: stopping:", err)
		return 1
	}
	return 0
}

// endpoint is a webhook server under load: where to send reviews, and the
// resources of the process that serves them.
type endpoint interface {
	address() (url string, caPEM []byte)
	// CPU is the serving process's user and system CPU time so far.
	CPU() time.Duration
	// Memory is the serving process's VmRSS and VmHWM.
	Memory() (rss, hwm int64)
	Stop() error
}

// inProcess is a server in the load generator's own process.
type inProcess struct{ *server }

func (s inProcess) address() (string, []byte) { return s.url, s.caPEM }
func (inProcess) CPU() time.Duration          { return sysinfo.CPUTime(sysinfo.Self) }
func (inProcess) Memory() (int64, int64)      { return sysinfo.Memory(sysinfo.Self) }
func (s inProcess) Stop() error               { return s.stop() }

// child is a server process started by startChild.
type child struct {
	*childproc.Process
	serving
}

func (c *child) address() (string, []byte) { return c.URL, c.CAPEM }

// serverGOGC is the GOGC of a server process: what config/manager sets
// for pipeguard-webhook (TestServerGOGCMatchesTheDeployment).
const serverGOGC = "400"

// startChild starts a server process for opts: this executable, re-run
// with the serve subcommand.
func startChild(ctx context.Context, opts Options) (*child, error) {
	c := &child{}
	args := []string{serveCommand, "--target", opts.Target,
		"--namespaces", strconv.Itoa(opts.Namespaces), "--policies", strconv.Itoa(opts.Policies)}
	p, err := childproc.Start(ctx, "server process", args, []string{"GOGC=" + serverGOGC}, childStartTimeout,
		&c.serving, func() bool { return c.URL != "" })
	if err != nil {
		return nil, err
	}
	c.Process = p
	return c, nil
}
