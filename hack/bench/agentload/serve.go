package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"time"

	"github.com/go-logr/logr"

	"github.com/pipeguard/pipeguard/agent/audit"
	"github.com/pipeguard/pipeguard/agent/gate"
	"github.com/pipeguard/pipeguard/agent/guard"
	"github.com/pipeguard/pipeguard/cmd/pipeguard-agent/app"
	"github.com/pipeguard/pipeguard/hack/bench/internal/childproc"
)

// serveCommand is the hidden subcommand that runs one agent in a process
// of its own: agentload re-executes itself with it, once gated and audited
// and once with neither, so each agent's CPU time and RSS are its own and
// the load generator stays out of both.
const serveCommand = "serve"

// auditMaxSize is pipeguard-agent's default --audit-log-maxsize.
const auditMaxSize = 100 << 20

// serving is what an agent process prints, as one JSON line on stdout,
// once it listens.
type serving struct {
	SocketDir string `json:"socketDir"`
	Kubelet   string `json:"kubelet"`
	AuditLog  string `json:"auditLog,omitempty"`
}

// serveMain runs an agent process: an agent whose kubelet directory (and,
// gated, whose audit log) lie in --dir, listening on unix sockets in a new
// temporary directory. It prints a serving line and serves until stdin is
// closed, which the parent does to stop it and which also happens when the
// parent dies.
func serveMain(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("agentload "+serveCommand, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	gated := fs.Bool("gated", false, "gate and audit every request, as pipeguard-agent does")
	dir := fs.String("dir", "", "directory of the kubelet directory and the audit log")
	if err := fs.Parse(args); err != nil || fs.NArg() > 0 || *dir == "" {
		if err == nil {
			err = errors.New("--dir is required and there are no arguments")
		}
		fmt.Fprintln(stderr, "agentload serve:", err)
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	s, a, closeAudit, err := assemble(ctx, *dir, *gated)
	if err != nil {
		fmt.Fprintln(stderr, "agentload serve:", err)
		return 1
	}
	defer os.RemoveAll(s.SocketDir)
	defer closeAudit()
	if err := a.Listen(ctx); err != nil {
		fmt.Fprintln(stderr, "agentload serve: listening:", err)
		return 1
	}
	if err := childproc.Serving(s, stdin, stdout, stop); err != nil {
		return 1
	}
	if err := a.Serve(ctx); err != nil {
		fmt.Fprintln(stderr, "agentload serve:", err)
		return 1
	}
	return 0
}

// assemble builds the agent as pipeguard-agent does with its defaults: the
// shipped gate rules alone, Metadata audit level, requests denied when
// their record cannot be written, the default durability of the audit
// log, and no metrics listener. The returned function closes the audit log.
func assemble(ctx context.Context, dir string, gated bool) (s serving, _ *app.Agent, closeAudit func() error, err error) {
	s.Kubelet = filepath.Join(dir, "kubelet")
	closeAudit = func() error { return nil }
	if err := os.MkdirAll(filepath.Join(s.Kubelet, "pods"), 0o755); err != nil {
		return s, nil, closeAudit, err
	}
	o := app.Options{Log: logr.Discard(), KubeletPath: s.Kubelet, MetricsBindAddress: "0"}
	if gated {
		engine, err := gate.New(ctx, gate.Options{Log: logr.Discard()})
		if err != nil {
			return s, nil, closeAudit, fmt.Errorf("gate: %w", err)
		}
		s.AuditLog = filepath.Join(dir, "audit", "audit.log")
		if err := os.MkdirAll(filepath.Dir(s.AuditLog), 0o755); err != nil {
			return s, nil, closeAudit, err
		}
		log, err := audit.Open(audit.Options{Path: s.AuditLog, MaxSize: auditMaxSize, Log: logr.Discard()})
		if err != nil {
			return s, nil, closeAudit, fmt.Errorf("audit log: %w", err)
		}
		closeAudit = log.Close
		o.Guard = &guard.Options{Log: logr.Discard(), Gate: engine, Audit: log}
	}
	// Unix socket paths are short (108 bytes): the sockets go to a new
	// directory in the temporary directory, not below dir.
	if s.SocketDir, err = os.MkdirTemp("", "pgal-"); err != nil {
		return s, nil, closeAudit, err
	}
	o.SocketDir = s.SocketDir
	a, err := app.New(o)
	if err != nil {
		os.RemoveAll(s.SocketDir)
	}
	return s, a, closeAudit, err
}

// child is an agent process started by startChild.
type child struct {
	*childproc.Process
	serving
}

// startChild starts an agent process: this executable, re-run with the
// serve subcommand. It may take 30 s to start.
func startChild(ctx context.Context, dir string, gated bool) (*child, error) {
	c := &child{}
	args := []string{serveCommand, "--dir", dir, "--gated=" + strconv.FormatBool(gated)}
	p, err := childproc.Start(ctx, "agent process", args, nil, 30*time.Second,
		&c.serving, func() bool { return c.SocketDir != "" })
	if err != nil {
		return nil, err
	}
	c.Process = p
	return c, nil
}
