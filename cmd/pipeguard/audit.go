package main

import (
	"flag"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/pipeguard/pipeguard/agent/audit"
)

const auditSourceHelp = `PATH is the agent's --audit-log-path file (its rotated siblings beside it
are read too), a directory of audit files, or "-" (the default) for
standard input.
`

// agentFlags names the agent's options, where the audit package's messages
// name them, by the pipeguard-agent flags that set them.
var agentFlags = func() *strings.Replacer {
	var pairs []string
	for option, flag := range audit.AgentFlags {
		pairs = append(pairs, option, flag)
	}
	return strings.NewReplacer(pairs...)
}()

// agentFlagError is an error of the audit package whose message names the
// agent's options by their flags.
type agentFlagError struct{ err error }

func (e agentFlagError) Error() string { return agentFlags.Replace(e.err.Error()) }
func (e agentFlagError) Unwrap() error { return e.err }

func auditCommand(sub string, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	switch sub {
	case "query":
		return auditQuery(args, stdin, stdout, stderr)
	case "summary":
		return auditSummary(args, stdin, stdout, stderr)
	case "verify":
		return auditVerify(args, stdin, stdout, stderr)
	}
	fmt.Fprintf(stderr, "pipeguard: unknown command %q\n\n%s", "audit "+sub, usage)
	return exitBadInput
}

// auditSource turns the positional argument into a source of records.
func auditSource(fs *flag.FlagSet, stdin io.Reader) (audit.Source, string, error) {
	switch fs.NArg() {
	case 0:
		return audit.Source{Reader: stdin, Name: "<stdin>"}, "-", nil
	case 1:
	default:
		return audit.Source{}, "", fmt.Errorf("give one PATH, got %q", fs.Args())
	}
	path := fs.Arg(0)
	if path == "-" {
		return audit.Source{Reader: stdin, Name: "<stdin>"}, path, nil
	}
	files, err := audit.Files(path)
	if err != nil {
		return audit.Source{}, "", agentFlagError{err}
	}
	return audit.Source{Paths: files}, path, nil
}

// filterFlags are the filters shared by query and summary.
type filterFlags struct {
	since, until, pod, namespace, caller, method, decision string
}

func (f *filterFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&f.since, "since", "", "only requests received at or after this time: RFC 3339 (2025-03-01T12:00:00Z) or a duration before now (90m)")
	fs.StringVar(&f.until, "until", "", "only requests received before this time (same forms as --since)")
	fs.StringVar(&f.pod, "pod", "", "only requests from this pod: NAME or NAMESPACE/NAME")
	fs.StringVar(&f.namespace, "namespace", "", "only requests from pods of this namespace")
	fs.StringVar(&f.caller, "caller", "", "only requests whose caller matches: part of the username, a pid, or a service account (NAME or NAMESPACE:NAME)")
	fs.StringVar(&f.method, "method", "", "only this method: NAME (Mkdir), GROUP/NAME (filesystem/Mkdir) or the full gRPC method")
	fs.StringVar(&f.decision, "decision", "", "only allow or deny")
}

func (f *filterFlags) filter(now time.Time) (audit.Filter, error) {
	out := audit.Filter{Pod: f.pod, Namespace: f.namespace, Caller: f.caller, Method: f.method, Decision: strings.ToLower(f.decision)}
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

func parseFlagSet(fs *flag.FlagSet, args []string) (int, bool) {
	if err := fs.Parse(interleave(args)); err != nil {
		if err == flag.ErrHelp {
			return exitOK, false
		}
		return exitBadInput, false
	}
	return 0, true
}

// interleave moves flags given after the PATH argument before it, so that
// "audit query audit.log --decision deny" works as people type it.
func interleave(args []string) []string {
	var flags, pos []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "--":
			pos = append(pos, args[i+1:]...)
			i = len(args)
		case a == "-" || !strings.HasPrefix(a, "-"):
			pos = append(pos, a)
		default:
			flags = append(flags, a)
			if !strings.Contains(a, "=") && i+1 < len(args) && !isBoolFlag(a) {
				flags = append(flags, args[i+1])
				i++
			}
		}
	}
	return append(flags, pos...)
}

func isBoolFlag(a string) bool {
	name := strings.TrimLeft(a, "-")
	return name == "follow" || name == "h" || name == "help"
}
