package app

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// startCommand runs pipeguard-agent, as it ships, on args, until ctx is
// done, and returns its exit code and stderr.
func startCommand(ctx context.Context, c *Command, args ...string) (int, string) {
	if c == nil {
		c = NewCommand(ctx)
	}
	var stdout, stderr bytes.Buffer
	c.Stdout, c.Stderr = &stdout, &stderr
	code := c.Execute(args)
	return code, stdout.String() + stderr.String()
}

// TestBadConfigurationExitsWithTwo: a configuration the agent cannot
// start with exits with 2, saying why.
func TestBadConfigurationExitsWithTwo(t *testing.T) {
	code, stderr := startCommand(context.Background(), nil, "--kubelet-path", "relative", "--metrics-bind-address", "0", "--audit-log-path", filepath.Join(t.TempDir(), "audit.log"))
	if code != 2 || !strings.Contains(stderr, "not absolute") {
		t.Fatalf("code %d, stderr %s", code, stderr)
	}
}

// TestConfigurationErrorsNameFlags checks that messages of the agent's
// packages, which name options, reach the user with the flags that set them.
func TestConfigurationErrorsNameFlags(t *testing.T) {
	code, stderr := startCommand(context.Background(), nil, "--metrics-bind-address", "0", "--audit-log-path", "")
	if code != 2 || !strings.Contains(stderr, "--audit-log-path: no audit log path: set --audit-log-path") {
		t.Fatalf("code %d, stderr %s", code, stderr)
	}

	code, stderr = startCommand(context.Background(), nil, "--metrics-bind-address", "0", "--policy-dir", t.TempDir()+"/missing")
	if code != 2 || !strings.Contains(stderr, "; create the directory or fix --policy-dir") || !strings.Contains(stderr, `"--policy-dir: reading agent policies:`) {
		t.Fatalf("code %d, stderr %s", code, stderr)
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
			code, stderr := startCommand(context.Background(), nil, append([]string{"--metrics-bind-address", "0"}, tc.args...)...)
			for _, want := range tc.want {
				if code != 2 || !strings.Contains(stderr, want) {
					t.Fatalf("code %d, stderr %s\nwant %s", code, stderr, want)
				}
			}
		})
	}
}
