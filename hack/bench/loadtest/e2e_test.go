//go:build !windows

package main

import (
	"context"
	"io"
	"os"
	"testing"
	"time"

	"github.com/go-logr/logr"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/pipeguard/pipeguard/internal/testenv"
)

// Through a real kube-apiserver, pipeguard and the ValidatingAdmissionPolicy
// both deny a CSI node pod in a namespace without the allowance (endToEnd
// waits for that before measuring) and every target's namespace admits the
// pods measured. Timing is not asserted.
func TestEndToEnd(t *testing.T) {
	if _, err := testenv.AssetsDir(); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("no control plane: %v", err)
		}
		t.Skipf("no control plane: %v; build one with hack/control-plane.sh and set %s", err, testenv.AssetsEnv)
	}
	ctrl.SetLogger(logr.Discard())
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	runs, err := endToEnd(ctx, 1, 2, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := len(runs), len(e2eTargets)*2; got != want {
		t.Fatalf("%d results, want %d (every target, pods with and without a hostPath)", got, want)
	}
}
