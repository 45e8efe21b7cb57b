package main

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/funcr"

	"github.com/pipeguard/pipeguard/agent/hostops/win32"
	"github.com/pipeguard/pipeguard/agent/hostops/wmi"
	"github.com/pipeguard/pipeguard/cmd/pipeguard-agent/app"
	"github.com/pipeguard/pipeguard/cmd/pipeguard-agent/flagname"
	"github.com/pipeguard/pipeguard/internal/option"
)

// win32Fixture, when set, gives the Win32 host of the disk, volume and smb
// groups in place of the machine's. Only a build with the tags wine and
// windows sets it (win32fixture_wine.go), for the tests under Wine, which
// has no disks to answer; the shipped binary leaves it nil.
var win32Fixture func() (win32.Sys, error)

// wmiFixture, when set, gives the WMI connection of the disk, volume, smb
// and iscsi groups in place of the host's WMI service. Only the build with
// the tags wine and windows sets it (wmifixture_wine.go), for the tests
// under Wine, whose WMI service has no storage, SMB or iSCSI classes; the
// shipped binary leaves it nil.
var wmiFixture func() (wmi.Conn, error)

// flagError is an error whose message names the agent's options by the
// flags that set them: the options app.Run rejects (an *app.OptionError)
// and those the agent's packages name in their messages (an
// *option.Error), wherever they are wrapped.
type flagError struct{ err error }

func (e flagError) Error() string { return option.Message(e.err, flagname.Of) }
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
	if wmiFixture != nil {
		conn, err := wmiFixture()
		if err != nil {
			log.Error(err, "invalid configuration: the WMI fixture of this test build could not be loaded")
			return 2
		}
		log.Info("test build: the WMI calls of the disk, volume, smb and iscsi groups go to a fixture, not to this machine; never run this build on a node")
		cfg.Agent.WMI = conn
	}
	err := app.Run(ctx, cfg.Config, ready)
	if err == nil {
		return 0
	}
	var oe *app.OptionError
	if errors.As(err, &oe) {
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
