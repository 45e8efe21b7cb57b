package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/funcr"

	"github.com/pipeguard/pipeguard/agent/audit"
	"github.com/pipeguard/pipeguard/agent/hostops/win32"
	"github.com/pipeguard/pipeguard/cmd/pipeguard-agent/app"
)

// win32Fixture, when set, gives the Win32 host of the disk, volume and smb
// groups in place of the machine's. Only a build with the tags wine and
// windows sets it (win32fixture_wine.go), for the tests under Wine, which
// has no disks to answer; the shipped binary leaves it nil.
var win32Fixture func() (win32.Sys, error)

// flagOf names the flag behind each option app.Run can reject (by its
// field of app.Config), and behind each option the agent's packages name in
// their messages (by its type and field; the audit log's come from
// audit.AgentFlags).
var flagOf = func() map[string]string {
	m := map[string]string{
		"Guard.PolicyDir":     "--policy-dir",
		"Guard.Kubeconfig":    "--kubeconfig",
		"Guard.NodeName":      "--node-name",
		"Guard.TokenAudience": "--token-audience",
		"Guard.Audit.Path":    "--audit-log-path",
		"Guard.CRIEndpoint":   "--cri-endpoint",
		"Guard.CRITimeout":    "--cri-timeout",

		"ListenOptions.SocketDir": "--socket-dir",
		"Options.PolicyDir":       "--policy-dir",
		"TokenOptions.Reviewer":   "--kubeconfig",
		"TokenOptions.Audience":   "--token-audience",
		"TokenOptions.NodeName":   "--node-name",
	}
	maps.Copy(m, audit.AgentFlags)
	return m
}()

// optionFlags rewrites the options a message names as their flags; longer
// names go first, so that a name is never cut short by a shorter one.
var optionFlags = func() *strings.Replacer {
	names := slices.SortedFunc(maps.Keys(flagOf), func(a, b string) int { return len(b) - len(a) })
	var pairs []string
	for _, name := range names {
		pairs = append(pairs, name, flagOf[name])
	}
	return strings.NewReplacer(pairs...)
}()

// flagError is an error whose message names the agent's options by the
// flags that set them.
type flagError struct{ err error }

func (e flagError) Error() string { return optionFlags.Replace(e.err.Error()) }
func (e flagError) Unwrap() error { return e.err }

// serve runs the agent until ctx is done and returns the exit code: 2 for a
// configuration it cannot start with, 1 when it cannot listen or serve.
func serve(ctx context.Context, cfg config, stderr io.Writer, ready func(addresses []string)) int {
	log := newLogger(stderr, cfg.verbosity)
	cfg.Agent.Log = log
	if win32Fixture != nil {
		sys, err := win32Fixture()
		if err != nil {
			log.Error(err, "invalid configuration: the Win32 fixture of this test build could not be loaded")
			return 2
		}
		log.Info("test build: the Win32 calls of the disk, volume and smb groups go to a fixture, not only to this machine; never run this build on a node")
		cfg.Agent.Win32 = sys
	}
	err := app.Run(ctx, cfg.Config, ready)
	if err == nil {
		return 0
	}
	var oe *app.OptionError
	if errors.As(err, &oe) {
		if flag, ok := flagOf[oe.Option]; ok {
			err = fmt.Errorf("%s: %w", flag, oe.Err)
		}
		log.Error(flagError{err}, "invalid configuration")
		return 2
	}
	log.Error(flagError{err}, "the agent stopped")
	return 1
}

func newLogger(w io.Writer, verbosity int) logr.Logger {
	return funcr.NewJSON(func(obj string) { fmt.Fprintln(w, obj) }, funcr.Options{
		LogTimestamp: true,
		Verbosity:    verbosity,
	}).WithName("pipeguard-agent")
}
