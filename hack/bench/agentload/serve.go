package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path"
	"path/filepath"
	"slices"
	"time"

	"github.com/go-logr/logr"
	"google.golang.org/grpc"

	"github.com/pipeguard/pipeguard/agent/audit"
	"github.com/pipeguard/pipeguard/agent/gate"
	"github.com/pipeguard/pipeguard/agent/guard"
	"github.com/pipeguard/pipeguard/cmd/pipeguard-agent/app"
	"github.com/pipeguard/pipeguard/hack/bench/internal/childproc"
)

// serveCommand is the hidden subcommand that runs one agent in a process
// of its own: agentload re-executes itself with it for each of the agents
// below, so each agent's CPU time and RSS are its own and the load
// generator stays out of them.
const serveCommand = "serve"

// The agents measured: one that gates and audits as pipeguard-agent does,
// one with neither, and one with neither that writes a record through the
// same audit log writer and waits for its fsync before each mutating call,
// committing in groups as the gated agent's write-ahead records do: what
// any agent adds to make a call durable.
const (
	agentUngated   = "ungated"
	agentGated     = "gated"
	agentFsyncOnly = "fsync-only"
)

// auditMaxSize is pipeguard-agent's default --audit-log-maxsize.
const auditMaxSize = 100 << 20

// serving is what an agent process prints, as one JSON line on stdout,
// once it listens.
type serving struct {
	SocketDir string `json:"socketDir"`
	Kubelet   string `json:"kubelet"`
	AuditLog  string `json:"auditLog,omitempty"`
}

// serveMain runs an agent process: an agent whose kubelet directory (and
// audit log or records) lie in --dir, listening on unix sockets in a new
// temporary directory. It prints a serving line and serves until stdin is
// closed, which the parent does to stop it and which also happens when the
// parent dies.
func serveMain(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("agentload "+serveCommand, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	agent := fs.String("agent", agentUngated, "the agent to run: "+agentUngated+", "+agentGated+" or "+agentFsyncOnly)
	dir := fs.String("dir", "", "directory of the kubelet directory and the audit log")
	if err := fs.Parse(args); err != nil || fs.NArg() > 0 || *dir == "" || !slices.Contains([]string{agentUngated, agentGated, agentFsyncOnly}, *agent) {
		if err == nil {
			err = errors.New("--dir is required, --agent is one of the three, and there are no arguments")
		}
		fmt.Fprintln(stderr, "agentload serve:", err)
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	s, a, closeAudit, err := assemble(ctx, *dir, *agent)
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
func assemble(ctx context.Context, dir, agent string) (s serving, _ *app.Agent, closeAudit func() error, err error) {
	s.Kubelet = filepath.Join(dir, "kubelet")
	closeAudit = func() error { return nil }
	if err := os.MkdirAll(filepath.Join(s.Kubelet, "pods"), 0o755); err != nil {
		return s, nil, closeAudit, err
	}
	o := app.Options{Log: logr.Discard(), KubeletPath: s.Kubelet, MetricsBindAddress: "0"}
	switch agent {
	case agentFsyncOnly, agentGated:
		s.AuditLog = filepath.Join(dir, agent, "audit.log") // Open makes its directory
		log, err := audit.Open(audit.Options{Path: s.AuditLog, MaxSize: auditMaxSize, Log: logr.Discard()})
		if err != nil {
			return s, nil, closeAudit, fmt.Errorf("audit log: %w", err)
		}
		closeAudit = log.Close
		if agent == agentFsyncOnly {
			o.UnaryInterceptors = []grpc.UnaryServerInterceptor{durableFirst(log)}
			break
		}
		engine, err := gate.New(ctx, gate.Options{Log: logr.Discard()})
		if err != nil {
			return s, nil, closeAudit, errors.Join(fmt.Errorf("gate: %w", err), log.Close())
		}
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

// durableFirst writes a record to log and waits for its fsync before
// each mutating call, and writes its completion record after it, without
// waiting, as the gated agent writes its write-ahead and completion
// records: the records go through pipeguard-agent's own audit log writer,
// so they commit in groups exactly as the gated agent's do, but the call
// is neither attributed, confined nor gated.
func durableFirst(log *audit.Log) grpc.UnaryServerInterceptor {
	return func(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
		if !gate.Mutating(path.Base(info.FullMethod)) {
			return handler(ctx, req)
		}
		now := audit.MicroTime{Time: time.Now()}
		id := log.NewAuditID()
		ev := &audit.Event{Kind: audit.Kind, APIVersion: audit.APIVersion, Level: audit.LevelMetadata, AuditID: id,
			Stage: audit.StageRequestReceived, RequestURI: info.FullMethod, Verb: "create", RequestReceivedTimestamp: now, StageTimestamp: now}
		if err := log.Append(ev, true); err != nil {
			return nil, fmt.Errorf("fsync-only agent: %w", err)
		}
		resp, err := handler(ctx, req)
		done := &audit.Event{Kind: audit.Kind, APIVersion: audit.APIVersion, Level: audit.LevelMetadata, AuditID: id,
			Stage: audit.StageResponseComplete, RequestURI: info.FullMethod, Verb: "create", RequestReceivedTimestamp: now,
			StageTimestamp: audit.MicroTime{Time: time.Now()}}
		if aerr := log.Append(done, false); aerr != nil {
			return nil, fmt.Errorf("fsync-only agent: %w", aerr)
		}
		return resp, err
	}
}

// child is an agent process started by startChild.
type child struct {
	*childproc.Process
	serving
}

// startChild starts an agent process: this executable, re-run with the
// serve subcommand. It may take 30 s to start.
func startChild(ctx context.Context, dir, agent string) (*child, error) {
	c := &child{}
	args := []string{serveCommand, "--dir", dir, "--agent", agent}
	p, err := childproc.Start(ctx, "agent process", args, nil, 30*time.Second,
		&c.serving, func() bool { return c.SocketDir != "" })
	if err != nil {
		return nil, err
	}
	c.Process = p
	return c, nil
}
