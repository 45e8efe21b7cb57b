package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"time"

	"github.com/go-logr/logr"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/pipeguard/pipeguard/hack/bench/internal/childproc"
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

func parseServeFlags(args []string) (*target, error) {
	fs := flag.NewFlagSet("loadtest "+serveCommand, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	name := fs.String("target", TargetPipeguard, "the target to serve")
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	t := targetOf(*name)
	if t == nil || t.peer {
		return nil, fmt.Errorf("--target %q is unknown; use %s", *name, strings.Join(servedTargets(), ", "))
	}
	return t, nil
}

// serveMain runs a server process: it serves the target on a free
// loopback port, prints where (a serving line) and serves until stdin is
// closed, which the parent does to stop it and which also happens when
// the parent dies.
func serveMain(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	t, err := parseServeFlags(args)
	if err != nil {
		fmt.Fprintln(stderr, "loadtest serve:", err)
		return 2
	}
	ctrl.SetLogger(logr.Discard())
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	h, err := newHandler(ctx, t)
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

// child is a server process started by startChild.
type child struct {
	*childproc.Process
	serving
}

// serverGOGC is the GOGC of a server process: what config/manager sets
// for pipeguard-webhook (TestServerGOGCMatchesTheDeployment).
const serverGOGC = "400"

// startChild starts a server process for target: this executable, re-run
// with the serve subcommand.
func startChild(ctx context.Context, target string) (*child, error) {
	c := &child{}
	p, err := childproc.Start(ctx, "server process", []string{serveCommand, "--target", target}, []string{"GOGC=" + serverGOGC},
		childStartTimeout, &c.serving, func() bool { return c.URL != "" })
	if err != nil {
		return nil, err
	}
	c.Process = p
	return c, nil
}
