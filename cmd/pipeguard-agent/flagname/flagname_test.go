package flagname_test

import (
	"context"
	"testing"

	"k8s.io/client-go/kubernetes/fake"

	"github.com/pipeguard/pipeguard/agent/audit"
	"github.com/pipeguard/pipeguard/agent/audit/anchor"
	"github.com/pipeguard/pipeguard/agent/audit/review"
	"github.com/pipeguard/pipeguard/agent/compare"
	"github.com/pipeguard/pipeguard/agent/gate"
	"github.com/pipeguard/pipeguard/agent/guard"
	hostsys "github.com/pipeguard/pipeguard/agent/hostops/system"
	"github.com/pipeguard/pipeguard/agent/identity"
	"github.com/pipeguard/pipeguard/cmd/pipeguard-agent/flagname"
	"github.com/pipeguard/pipeguard/internal/option"
)

// TestFlagsOfThePackagesOptions checks the table against the keys the
// agent's packages give their options, so that a key renamed there cannot
// leave a message naming a Go option to the user.
func TestFlagsOfThePackagesOptions(t *testing.T) {
	for key, want := range map[string]string{
		audit.OptionPath:                 "--audit-log-path",
		audit.OptionMaxBackups:           "--audit-log-maxbackup",
		audit.OptionMaxUnsentBytes:       "--audit-webhook-unsent-max-bytes",
		gate.OptionPolicyDir:             "--policy-dir",
		identity.OptionTokenReviewer:     "--kubeconfig",
		identity.OptionTokenAudience:     "--token-audience",
		identity.OptionTokenNodeName:     "--node-name",
		identity.OptionCRIEndpoint:       "--cri-endpoint",
		guard.OptionFailure:              "--audit-failure",
		guard.OptionTokens:               "--kubeconfig",
		hostsys.OptionAllowedServices:    "--allowed-service",
		audit.OptionAnchorCluster:        "--kubeconfig",
		audit.OptionAnchorNode:           "--node-name",
		audit.OptionWebhookBatchMaxBytes: "--audit-webhook-batch-max-bytes",
		compare.OptionTimeout:            "--timeout",
		"Guard.Audit.Path":               "--audit-log-path",
		"Guard.PolicyDir":                "--policy-dir",
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

// TestMessagesNameTheFlags: messages of the agent's packages that name
// their options read, shown with this table, as the users of both
// binaries read them, naming the flags.
func TestMessagesNameTheFlags(t *testing.T) {
	_, anchorErr := anchor.New(anchor.Options{})
	_, readErr := review.ReadAnchor(context.Background(), fake.NewClientset(), "", "node-a")
	cases := map[string]struct{ got, want string }{
		"the note of a Windows caller without a CRI endpoint": {
			got:  identity.NoteNoCRI.Render(flagname.Of),
			want: "no CRI endpoint is configured (--cri-endpoint), so Windows processes are not mapped to containers and pods: pod fields stay empty",
		},
		"the anchor publisher without a client": {
			got:  option.Message(anchorErr, flagname.Of),
			want: "audit anchor publisher: Options.Client, Options.Node and Options.Head are required (the agent needs --kubeconfig and --node-name)",
		},
		"a node without an anchor": {
			got:  option.Message(readErr, flagname.Of),
			want: `no audit anchor for node "node-a": Lease pipeguard-agent/pipeguard-audit-node-a does not exist; the agent on that node publishes it when it runs with --kubeconfig and --node-name`,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if tc.got != tc.want {
				t.Errorf("\n got %q\nwant %q", tc.got, tc.want)
			}
		})
	}
}
