package main

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/funcr"

	"github.com/pipeguard/pipeguard/cmd/pipeguard-agent/app"
)

// flagOf names the flag behind each option app.Run can reject.
var flagOf = map[string]string{
	"Guard.PolicyDir":     "--policy-dir",
	"Guard.Kubeconfig":    "--kubeconfig",
	"Guard.NodeName":      "--node-name",
	"Guard.TokenAudience": "--token-audience",
	"Guard.Audit.Path":    "--audit-log-path",
}

// serve runs the agent until ctx is done and returns the exit code: 2 for a
// configuration it cannot start with, 1 when it cannot listen or serve.
func serve(ctx context.Context, cfg config, stderr io.Writer, ready func(addresses []string)) int {
	log := newLogger(stderr, cfg.verbosity)
	cfg.Agent.Log = log
	err := app.Run(ctx, cfg.Config, ready)
	if err == nil {
		return 0
	}
	var oe *app.OptionError
	if errors.As(err, &oe) {
		if flag, ok := flagOf[oe.Option]; ok {
			err = fmt.Errorf("%s: %w", flag, oe.Err)
		}
		log.Error(err, "invalid configuration")
		return 2
	}
	log.Error(err, "the agent stopped")
	return 1
}

func newLogger(w io.Writer, verbosity int) logr.Logger {
	return funcr.NewJSON(func(obj string) { fmt.Fprintln(w, obj) }, funcr.Options{
		LogTimestamp: true,
		Verbosity:    verbosity,
	}).WithName("pipeguard-agent")
}
