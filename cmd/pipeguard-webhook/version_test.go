package main

import (
	"bytes"
	"os"
	"os/exec"
	"testing"

	"github.com/pipeguard/pipeguard/internal/version"
)

// When the test binary is started with this variable set, it is
// pipeguard-webhook.
const asWebhookEnv = "PIPEGUARD_WEBHOOK_TEST_AS_WEBHOOK"

func TestMain(m *testing.M) {
	if os.Getenv(asWebhookEnv) == "1" {
		main()
	}
	os.Exit(m.Run())
}

// TestVersionFlag: pipeguard-webhook --version prints the one line every
// pipeguard binary prints and exits 0, without a cluster to talk to.
func TestVersionFlag(t *testing.T) {
	cmd := exec.Command(os.Args[0], "--version")
	cmd.Env = append(os.Environ(), asWebhookEnv+"=1", "KUBECONFIG=/nonexistent")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("pipeguard-webhook --version: %v\nstderr: %s", err, stderr.String())
	}
	if want := "pipeguard-webhook " + version.Get().String() + "\n"; stdout.String() != want || stderr.Len() != 0 {
		t.Fatalf("stdout %q, stderr %q; want %q and nothing on stderr", stdout.String(), stderr.String(), want)
	}
}
