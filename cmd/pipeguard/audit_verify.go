package main

import (
	"flag"
	"fmt"
	"io"

	"github.com/pipeguard/pipeguard/agent/audit"
)

// auditVerify recomputes the hash chain. Exit 0 only when the whole chain
// is intact: scripts outside the repository rely on it.
func auditVerify(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("pipeguard audit verify", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprint(stderr, "Usage: pipeguard audit verify [PATH|-]\n\nRecomputes the SHA-256 chain of a pipeguard-agent audit log across its\nrotated files and reports the first edited, deleted, reordered or missing\nrecord. A torn final line (a write cut short when the agent stopped) is\nreported but does not fail verification.\n"+auditSourceHelp+"\nExit code: 0 the whole chain is intact, 1 it is not, 2 the log cannot be read.\n")
	}
	if code, ok := parseFlagSet(fs, args); !ok {
		return code
	}
	src, _, err := auditSource(fs, stdin)
	if err != nil {
		fmt.Fprintf(stderr, "pipeguard audit verify: %v\n", err)
		return exitBadInput
	}
	rep, err := audit.Verify(src)
	if err != nil {
		fmt.Fprintf(stderr, "pipeguard audit verify: %v\n", err)
		return exitBadInput
	}
	for _, n := range rep.Notices {
		fmt.Fprintf(stdout, "notice: %s\n", withFlags(n))
	}
	if !rep.OK() {
		fmt.Fprintf(stdout, "FAIL: %s\n", withFlags(rep.Problems[0]))
		for _, p := range rep.Problems[1:] {
			fmt.Fprintf(stdout, "also: %s\n", withFlags(p))
		}
		return exitDenied
	}
	fmt.Fprintf(stdout, "OK: audit chain intact: %d records, seq %d–%d, in %d %s\n", rep.Records, rep.First, rep.Last, len(rep.Files), plural(len(rep.Files), "file", "files"))
	return exitOK
}

// withFlags names the agent's options in a finding by their flags.
func withFlags(f audit.Finding) audit.Finding {
	f.Msg = agentFlags.Replace(f.Msg)
	return f
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}
