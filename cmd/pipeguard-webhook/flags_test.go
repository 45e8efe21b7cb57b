package main

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestServerFlagsRefused: a webhook server flag that cannot work stops
// pipeguard-webhook before it starts, exit code 2, with a message that
// names the flag, what is wrong and what it wants.
func TestServerFlagsRefused(t *testing.T) {
	dir := t.TempDir()
	notPEM := filepath.Join(dir, "ca.txt")
	if err := os.WriteFile(notPEM, []byte("not a certificate\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for name, tc := range map[string]struct {
		args []string
		want string
	}{
		"no reviews in flight": {[]string{"--max-reviews-in-flight", "0"},
			"pipeguard-webhook: --max-reviews-in-flight 0: want at least 1 (default 8)"},
		"no connections": {[]string{"--max-connections", "-1"},
			"pipeguard-webhook: --max-connections -1: want at least 1 (default 256)"},
		"a client CA file that is missing": {[]string{"--client-ca-file", filepath.Join(dir, "missing.pem")},
			"pipeguard-webhook: --client-ca-file: client CA bundle: stat " + filepath.Join(dir, "missing.pem") + ": no such file or directory; give the file of the CA that signs the API server's webhook client certificate"},
		"a client CA file without a certificate": {[]string{"--client-ca-file", notPEM},
			"pipeguard-webhook: --client-ca-file: client CA bundle " + notPEM + " holds no PEM certificate; give the PEM file of the CA that signs the API server's webhook client certificate"},
	} {
		t.Run(name, func(t *testing.T) {
			cmd := exec.Command(os.Args[0], tc.args...)
			cmd.Env = append(os.Environ(), asWebhookEnv+"=1", "KUBECONFIG=/nonexistent")
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			err := cmd.Run()
			var exit *exec.ExitError
			if !errors.As(err, &exit) || exit.ExitCode() != 2 {
				t.Fatalf("pipeguard-webhook %s: %v, want exit code 2\nstderr: %s", strings.Join(tc.args, " "), err, stderr.String())
			}
			if got := strings.TrimSpace(stderr.String()); got != tc.want {
				t.Errorf("stderr %q\nwant   %q", got, tc.want)
			}
		})
	}
}
