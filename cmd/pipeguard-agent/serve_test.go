package main

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"
)

// TestConfigurationErrorsNameFlags checks that messages of the agent's
// packages, which name options, reach the user with the flags that set them.
func TestConfigurationErrorsNameFlags(t *testing.T) {
	var stderr bytes.Buffer
	cfg, _, ok := parseFlags([]string{"--metrics-bind-address", "0", "--audit-log-path", ""}, &stderr)
	if !ok {
		t.Fatal(stderr.String())
	}
	code := serve(context.Background(), cfg, &stderr, nil)
	if code != 2 || !strings.Contains(stderr.String(), "--audit-log-path: no audit log path: set --audit-log-path") {
		t.Fatalf("code %d, stderr %s", code, stderr.String())
	}
	if got := (flagError{errors.New("no socket dir: set ListenOptions.SocketDir")}).Error(); got != "no socket dir: set --socket-dir" {
		t.Errorf("flagError = %q", got)
	}

	stderr.Reset()
	cfg, _, ok = parseFlags([]string{"--metrics-bind-address", "0", "--policy-dir", t.TempDir() + "/missing"}, &stderr)
	if !ok {
		t.Fatal(stderr.String())
	}
	code = serve(context.Background(), cfg, &stderr, nil)
	if code != 2 || !strings.Contains(stderr.String(), "; create the directory or fix --policy-dir") || !strings.Contains(stderr.String(), `"--policy-dir: reading agent policies:`) {
		t.Fatalf("code %d, stderr %s", code, stderr.String())
	}
}
