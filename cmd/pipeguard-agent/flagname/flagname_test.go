package flagname_test

import (
	"testing"

	"github.com/pipeguard/pipeguard/agent/audit"
	"github.com/pipeguard/pipeguard/agent/audit/anchor"
	"github.com/pipeguard/pipeguard/agent/gate"
	"github.com/pipeguard/pipeguard/agent/identity"
	"github.com/pipeguard/pipeguard/cmd/pipeguard-agent/flagname"
)

// TestFlagsOfThePackagesOptions checks the table against the keys the
// agent's packages give their options, so that a key renamed there cannot
// leave a message naming a Go option to the user.
func TestFlagsOfThePackagesOptions(t *testing.T) {
	for key, want := range map[string]string{
		audit.OptionPath:             "--audit-log-path",
		audit.OptionMaxBackups:       "--audit-log-maxbackup",
		audit.OptionMaxUnsentBytes:   "--audit-webhook-unsent-max-bytes",
		gate.OptionPolicyDir:         "--policy-dir",
		identity.OptionTokenReviewer: "--kubeconfig",
		identity.OptionTokenAudience: "--token-audience",
		identity.OptionTokenNodeName: "--node-name",
		"Guard.Audit.Path":           "--audit-log-path",
		"Guard.PolicyDir":            "--policy-dir",
	} {
		if got, ok := flagname.Of(key); !ok || got != want {
			t.Errorf("Of(%q) = %q, %v; want %q", key, got, ok, want)
		}
	}
	for _, key := range []string{anchor.OptionClient, anchor.OptionNode, anchor.OptionHead, "Agent"} {
		if got, ok := flagname.Of(key); ok {
			t.Errorf("Of(%q) = %q; want no flag", key, got)
		}
	}
}
