package guard

import (
	"context"
	"testing"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	"google.golang.org/grpc/status"

	"github.com/pipeguard/pipeguard/agent/audit"
	"github.com/pipeguard/pipeguard/agent/confine"
	"github.com/pipeguard/pipeguard/agent/gate"
)

// agentFlags is a command's table of the flags behind the guard's options,
// as pipeguard-agent's (cmd/pipeguard-agent/flagname) names them.
func agentFlags(key string) (string, bool) {
	f, ok := map[string]string{OptionFailure: "--audit-failure", OptionTokens: "--kubeconfig"}[key]
	return f, ok
}

// TestMessagesNameTheOptions: the guard's run-time messages name its
// options by their Go names, and by the command's flags when its Options
// carry the command's Namer: the status a refused caller reads, the log
// lines, the token note of the audit record and the metric's help.
func TestMessagesNameTheOptions(t *testing.T) {
	cases := map[string]struct {
		namer                          func(string) (string, bool)
		status, lost, notWritten, note string
		help                           string
	}{
		"the library's own words": {
			status:     "the audit log cannot be written (audit log is closed); the request was not run because pipeguard-agent runs with Options.Failure=deny; free space or fix permissions on the audit log directory (rule audit-unavailable)",
			lost:       "AUDIT RECORD LOST: request let through without a record (Options.Failure=allow)",
			notWritten: "audit record not written: request denied (Options.Failure=deny)",
			note:       "sent but not verified: the agent has no Options.Tokens; identity is the peer's",
			help:       "Audit records that could not be written, by what happened to the request: denied, allowed (under Options.Failure=allow), or completed (a completion record lost after the host operation ran).",
		},
		"named by the command": {
			namer:      agentFlags,
			status:     "the audit log cannot be written (audit log is closed); the request was not run because pipeguard-agent runs with --audit-failure=deny; free space or fix permissions on the audit log directory (rule audit-unavailable)",
			lost:       "AUDIT RECORD LOST: request let through without a record (--audit-failure=allow)",
			notWritten: "audit record not written: request denied (--audit-failure=deny)",
			note:       "sent but not verified: the agent has no --kubeconfig; identity is the peer's",
			help:       "Audit records that could not be written, by what happened to the request: denied, allowed (under --audit-failure=allow), or completed (a completion record lost after the host operation ran).",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			engine, err := gate.New(context.Background(), gate.Options{Log: logr.Discard()})
			if err != nil {
				t.Fatal(err)
			}
			log, err := audit.Open(audit.Options{Path: t.TempDir() + "/audit.log", Log: logr.Discard()})
			if err != nil {
				t.Fatal(err)
			}
			conf, err := confine.New(confine.Options{Flavour: confine.Linux, Roots: []string{"/var/lib/kubelet"}})
			if err != nil {
				t.Fatal(err)
			}
			reg := prometheus.NewRegistry()
			g, err := New(Options{Confiner: conf, Gate: engine, Audit: log, Registerer: reg, Namer: tc.namer})
			if err != nil {
				t.Fatal(err)
			}
			if err := log.Close(); err != nil {
				t.Fatal(err)
			}
			err = g.write(context.Background(), &audit.Event{}, true)
			if got := status.Convert(err).Message(); got != tc.status {
				t.Errorf("status:\n got %q\nwant %q", got, tc.status)
			}
			if g.text.lost != tc.lost || g.text.notWritten != tc.notWritten {
				t.Errorf("log lines %q, %q; want %q, %q", g.text.lost, g.text.notWritten, tc.lost, tc.notWritten)
			}
			if g.text.unverifiedToken != tc.note {
				t.Errorf("token note %q, want %q", g.text.unverifiedToken, tc.note)
			}
			g.auditFailures.WithLabelValues("denied")
			mfs, err := reg.Gather()
			if err != nil {
				t.Fatal(err)
			}
			var help string
			for _, mf := range mfs {
				if mf.GetName() == "pipeguard_agent_audit_write_failures_total" {
					help = mf.GetHelp()
				}
			}
			if help != tc.help {
				t.Errorf("help:\n got %q\nwant %q", help, tc.help)
			}
		})
	}
}
