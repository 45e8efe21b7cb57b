package main

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"strings"
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

// TestMainExits: main hands the command its arguments and exits with its
// code; app's TestFlags tests the flags themselves.
func TestMainExits(t *testing.T) {
	for name, tc := range map[string]struct {
		args           []string
		code           int
		stdout, stderr string // stderr: its first line
	}{
		"--version": {[]string{"--version"}, 0, "pipeguard-webhook " + version.Get().String() + "\n", ""},
		"--help":    {[]string{"--help"}, 0, "", "Usage of pipeguard-webhook:"},
		"a refused flag": {[]string{"--max-reviews-in-flight", "0"}, 2, "",
			"pipeguard-webhook: --max-reviews-in-flight 0: want at least 1 (default 8)"},
		"no API server": {nil, 1, "", "pipeguard-webhook: no API server configuration: "},
	} {
		t.Run(name, func(t *testing.T) {
			cmd := exec.Command(os.Args[0], tc.args...)
			cmd.Env = append(os.Environ(), asWebhookEnv+"=1", "KUBECONFIG=/nonexistent")
			var stdout, stderr bytes.Buffer
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			err := cmd.Run()
			code := 0
			if exit := (*exec.ExitError)(nil); errors.As(err, &exit) {
				code = exit.ExitCode()
			} else if err != nil {
				t.Fatal(err)
			}
			firstLine, _, _ := strings.Cut(stderr.String(), "\n")
			if code != tc.code || stdout.String() != tc.stdout || !strings.HasPrefix(firstLine, tc.stderr) || (tc.stderr == "" && stderr.Len() != 0) {
				t.Errorf("pipeguard-webhook %s: exit code %d, stdout %q, stderr %q\nwant %d, %q, %q", strings.Join(tc.args, " "), code, stdout.String(), stderr.String(), tc.code, tc.stdout, tc.stderr)
			}
		})
	}
}
