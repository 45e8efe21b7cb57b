package main

import (
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/pipeguard/pipeguard/agent/audit"
	"github.com/pipeguard/pipeguard/agent/audit/review"
	"github.com/pipeguard/pipeguard/cmd/pipeguard-agent/flagname"
	"github.com/pipeguard/pipeguard/internal/option"
)

const auditSourceHelp = `PATH is the agent's --audit-log-path file (its rotated siblings beside it
are read too), a directory of audit files, or "-" (the default) for
standard input.`

// agentFlagError is an error of the audit packages whose message names the
// agent's options by the pipeguard-agent flags that set them.
type agentFlagError struct{ err error }

func (e agentFlagError) Error() string { return option.Message(e.err, flagname.Of) }
func (e agentFlagError) Unwrap() error { return e.err }

func newAuditCommand(name string, s streams) *cobra.Command {
	c := &cobra.Command{
		Use:   "audit",
		Short: "Query, summarize and verify pipeguard-agent audit logs",
		Long: `Reads the hash-chained audit log of pipeguard-agent: lists its requests,
counts them, and verifies that no record was edited, deleted, reordered or
cut off.

` + auditSourceHelp,
		Example: examples(name, `
  # The denied requests of a node's log
  %[1]s audit query /var/log/pipeguard/audit.log --decision deny

  # Who called what, and what was denied most
  %[1]s audit summary /var/log/pipeguard/audit.log

  # Exit 0 only when the chain is intact
  %[1]s audit verify /var/log/pipeguard/audit.log`),
		RunE: groupRun,
	}
	c.AddCommand(newAuditQueryCommand(name, s), newAuditSummaryCommand(name, s), newAuditVerifyCommand(name, s))
	return c
}

// auditSource turns the positional argument into a source of records.
// With no argument it reads standard input, unless that is a terminal:
// then nobody is piping records in, and waiting for them would look like
// a hang, so it says what it wants instead (a usage error). "-" reads a
// terminal too, as asked.
func auditSource(args []string, stdin io.Reader) (review.Source, error) {
	if len(args) == 0 && isTerminal(stdin) {
		return review.Source{}, usageFailure("no audit log given, and standard input is a terminal: " +
			"give the agent's --audit-log-path file or a directory of audit files (e.g. /var/log/pipeguard/audit.log), " +
			`or pipe records in ("-" reads standard input)`)
	}
	if len(args) == 0 || args[0] == "-" {
		return review.Source{Reader: stdin, Name: "<stdin>"}, nil
	}
	files, err := audit.Files(args[0])
	if err != nil {
		return review.Source{}, agentFlagError{err}
	}
	return review.Source{Paths: files}, nil
}

// filterFlags are the filters shared by query and summary.
type filterFlags struct {
	since, until, pod, namespace, caller, method, decision string
}

func (f *filterFlags) register(c *cobra.Command) {
	fs := c.Flags()
	fs.StringVar(&f.since, "since", "", "only requests received at or after this `TIME`: RFC 3339 (2025-03-01T12:00:00Z) or a duration before now (90m)")
	fs.StringVar(&f.until, "until", "", "only requests received before this `TIME` (same forms as --since)")
	fs.StringVar(&f.pod, "pod", "", "only requests from this `POD`: NAME or NAMESPACE/NAME")
	fs.StringVarP(&f.namespace, "namespace", "n", "", "only requests from pods of this `NAMESPACE`")
	fs.StringVar(&f.caller, "caller", "", "only requests whose `CALLER` matches: part of the username, a pid, or a service account (NAME or NAMESPACE:NAME)")
	fs.StringVar(&f.method, "method", "", "only this `METHOD`: NAME (Mkdir), GROUP/NAME (filesystem/Mkdir) or the full gRPC method")
	fs.StringVar(&f.decision, "decision", "", "only requests with this `DECISION`: allow or deny")
	_ = c.RegisterFlagCompletionFunc("decision", cobra.FixedCompletions([]string{audit.DecisionAllow, audit.DecisionDeny}, cobra.ShellCompDirectiveNoFileComp))
}

func (f *filterFlags) filter(now time.Time) (review.Filter, error) {
	out := review.Filter{Pod: f.pod, Namespace: f.namespace, Caller: f.caller, Method: f.method, Decision: strings.ToLower(f.decision)}
	var err error
	if out.Since, err = parseTime("--since", f.since, now); err != nil {
		return out, err
	}
	if out.Until, err = parseTime("--until", f.until, now); err != nil {
		return out, err
	}
	if out.Decision != "" && out.Decision != audit.DecisionAllow && out.Decision != audit.DecisionDeny {
		return out, fmt.Errorf("--decision %q: want allow or deny", f.decision)
	}
	return out, nil
}

func parseTime(flagName, v string, now time.Time) (time.Time, error) {
	if v == "" {
		return time.Time{}, nil
	}
	if t, err := time.Parse(time.RFC3339Nano, v); err == nil {
		return t, nil
	}
	if d, err := time.ParseDuration(v); err == nil && d >= 0 {
		return now.Add(-d), nil
	}
	return time.Time{}, fmt.Errorf("%s %q: want an RFC 3339 time such as 2025-03-01T12:00:00Z, or a duration before now such as 90m", flagName, v)
}

// isTerminal reports whether r is a terminal.
func isTerminal(r io.Reader) bool {
	f, ok := r.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}
