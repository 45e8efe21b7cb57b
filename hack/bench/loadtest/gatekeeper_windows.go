package main

import (
	"context"
	"errors"
	"io"
)

// gatekeeperEnv would hold Gatekeeper's control plane, which this tool
// starts on Linux and macOS only.
type gatekeeperEnv struct{ peer GatekeeperPeer }

var errGatekeeperPlatform = errors.New("the " + TargetGatekeeper + " target starts kube-apiserver and etcd, which this tool runs on Linux and macOS only")

func startGatekeeperEnv(context.Context, string, string, int, io.Writer) (*gatekeeperEnv, error) {
	return nil, errGatekeeperPlatform
}

func (*gatekeeperEnv) stop() error { return nil }

func runGatekeeper(context.Context, *gatekeeperEnv, Options, *target, *mix) (*Result, error) {
	return nil, errGatekeeperPlatform
}
