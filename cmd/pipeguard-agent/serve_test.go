package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
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

// TestUserValuesThatLookLikeOptionsAreNotRenamed gives the agent paths
// named like the options its packages name. Only the options a message
// names are shown as flags; the paths the user gave are shown as given.
func TestUserValuesThatLookLikeOptionsAreNotRenamed(t *testing.T) {
	dir := t.TempDir()
	notADir := filepath.Join(dir, "Options.Path")
	if err := os.WriteFile(notADir, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	policies := filepath.Join(dir, "Options.PolicyDir", "missing")
	cases := map[string]struct {
		args []string
		want []string
	}{
		"an audit log path below a file named Options.Path": {
			args: []string{"--audit-log-path", filepath.Join(notADir, "audit.log")},
			want: []string{`"--audit-log-path: creating the audit log directory: mkdir ` + notADir + `: not a directory"`},
		},
		"a policy dir below a directory named Options.PolicyDir": {
			args: []string{"--policy-dir", policies},
			want: []string{`"--policy-dir: reading agent policies: open ` + policies + `: no such file or directory; create the directory or fix --policy-dir"`},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			var stderr bytes.Buffer
			cfg, _, ok := parseFlags(append([]string{"--metrics-bind-address", "0"}, tc.args...), &stderr)
			if !ok {
				t.Fatal(stderr.String())
			}
			code := serve(context.Background(), cfg, &stderr, nil)
			for _, want := range tc.want {
				if code != 2 || !strings.Contains(stderr.String(), want) {
					t.Fatalf("code %d, stderr %s\nwant %s", code, stderr.String(), want)
				}
			}
		})
	}
}
