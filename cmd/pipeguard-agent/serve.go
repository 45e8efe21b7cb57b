package main

import (
	"context"
	"fmt"
	"io"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/funcr"

	"github.com/pipeguard/pipeguard/agent"
)

// serve assembles the agent, listens, reports the addresses to ready (when
// set), and serves until ctx is done.
func serve(ctx context.Context, cfg config, stderr io.Writer, ready func(addresses []string)) int {
	log := newLogger(stderr, cfg.verbosity)
	cfg.agent.Log = log
	a, err := agent.New(cfg.agent)
	if err != nil {
		log.Error(err, "invalid configuration")
		return 2
	}
	if err := a.Listen(ctx); err != nil {
		log.Error(err, "cannot listen")
		return 1
	}
	log.Info("listening", "addresses", a.Addresses(), "kubeletPath", cfg.agent.KubeletPath, "workingDirs", cfg.agent.WorkingDirs)
	if ready != nil {
		ready(a.Addresses())
	}
	if err := a.Serve(ctx); err != nil {
		log.Error(err, "serving failed")
		return 1
	}
	return 0
}

func newLogger(w io.Writer, verbosity int) logr.Logger {
	return funcr.NewJSON(func(obj string) { fmt.Fprintln(w, obj) }, funcr.Options{
		LogTimestamp: true,
		Verbosity:    verbosity,
	}).WithName("pipeguard-agent")
}
