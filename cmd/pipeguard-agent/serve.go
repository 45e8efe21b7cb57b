package main

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/funcr"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/pipeguard/pipeguard/agent"
	"github.com/pipeguard/pipeguard/agent/audit"
	"github.com/pipeguard/pipeguard/agent/gate"
	"github.com/pipeguard/pipeguard/agent/guard"
	"github.com/pipeguard/pipeguard/agent/identity"
)

// podSyncTimeout bounds the wait for the first pod list.
const podSyncTimeout = time.Minute

// serve assembles the agent with its gate, identity and audit log, listens,
// reports the addresses to ready (when set), and serves until ctx is done.
func serve(ctx context.Context, cfg config, stderr io.Writer, ready func(addresses []string)) int {
	log := newLogger(stderr, cfg.verbosity)
	cfg.agent.Log = log
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()

	g, err := guardOptions(ctx, cfg, log)
	if err != nil {
		log.Error(err, "invalid configuration")
		return 2
	}
	cfg.agent.Guard = g
	defer func() {
		if err := g.Audit.Close(); err != nil {
			log.Error(err, "closing the audit log")
		}
	}()
	go func() {
		if err := g.Gate.Watch(ctx, gate.DefaultRescan); err != nil {
			log.Error(err, "agent policies are not watched; restart the agent to load changes", "dir", cfg.policyDir)
		}
	}()

	a, err := agent.New(cfg.agent)
	if err != nil {
		log.Error(err, "invalid configuration")
		return 2
	}
	if err := a.Listen(ctx); err != nil {
		log.Error(err, "cannot listen")
		return 1
	}
	log.Info("listening", "addresses", a.Addresses(), "kubeletPath", cfg.agent.KubeletPath, "workingDirs", cfg.agent.WorkingDirs,
		"auditLogPath", cfg.audit.Path, "policyDir", cfg.policyDir)
	if ready != nil {
		ready(a.Addresses())
	}
	if err := a.Serve(ctx); err != nil {
		log.Error(err, "serving failed")
		return 1
	}
	return 0
}

// guardOptions builds the gate, the audit log and, with a kubeconfig, the
// pod watch and token verifier.
func guardOptions(ctx context.Context, cfg config, log logr.Logger) (*guard.Options, error) {
	engine, err := gate.New(ctx, gate.Options{PolicyDir: cfg.policyDir, Log: log.WithName("gate")})
	if err != nil {
		return nil, fmt.Errorf("--policy-dir: %w", err)
	}
	g := &guard.Options{Gate: engine, Level: cfg.auditLevel, Failure: cfg.auditFailure}
	if cfg.kubeconfig != "" {
		client, err := kubeClient(cfg.kubeconfig)
		if err != nil {
			return nil, err
		}
		pods, err := identity.NewPodIndex(client, cfg.nodeName)
		if err != nil {
			return nil, err
		}
		if err := pods.Start(ctx, podSyncTimeout); err != nil {
			return nil, err
		}
		tokens, err := identity.NewTokenVerifier(identity.TokenOptions{
			Reviewer: client.AuthenticationV1().TokenReviews(), Audience: cfg.tokenAudience, NodeName: cfg.nodeName})
		if err != nil {
			return nil, err
		}
		g.Pods, g.Tokens = pods, tokens
	}
	ao := cfg.audit
	ao.Log = log.WithName("audit")
	if g.Audit, err = audit.Open(ao); err != nil {
		return nil, fmt.Errorf("--audit-log-path: %w", err)
	}
	return g, nil
}

func kubeClient(kubeconfig string) (kubernetes.Interface, error) {
	var rc *rest.Config
	var err error
	if kubeconfig == "in-cluster" {
		rc, err = rest.InClusterConfig()
	} else {
		rc, err = clientcmd.BuildConfigFromFlags("", kubeconfig)
	}
	if err != nil {
		return nil, fmt.Errorf("--kubeconfig %s: %w", kubeconfig, err)
	}
	rc.UserAgent = "pipeguard-agent"
	return kubernetes.NewForConfig(rc)
}

func newLogger(w io.Writer, verbosity int) logr.Logger {
	return funcr.NewJSON(func(obj string) { fmt.Fprintln(w, obj) }, funcr.Options{
		LogTimestamp: true,
		Verbosity:    verbosity,
	}).WithName("pipeguard-agent")
}
