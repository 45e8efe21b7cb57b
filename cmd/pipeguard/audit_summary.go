package main

import (
	"flag"
	"fmt"
	"io"
	"time"

	"github.com/pipeguard/pipeguard/agent/audit"
)

func auditSummary(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("pipeguard audit summary", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var ff filterFlags
	ff.register(fs)
	top := fs.Int("top", 10, "how many caller, method and rule combinations to list under \"Top denied\"")
	fs.Usage = func() {
		fmt.Fprint(stderr, "Usage: pipeguard audit summary [PATH|-] [flags]\n\nCounts requests per caller, method and decision, and lists the most\ndenied callers with the rule that denied them.\n"+auditSourceHelp+"\nFlags:\n")
		fs.PrintDefaults()
	}
	if code, ok := parseFlagSet(fs, args); !ok {
		return code
	}
	filter, err := ff.filter(time.Now())
	if err != nil {
		fmt.Fprintf(stderr, "pipeguard audit summary: %v\n", err)
		return exitBadInput
	}
	src, _, err := auditSource(fs, stdin)
	if err != nil {
		fmt.Fprintf(stderr, "pipeguard audit summary: %v\n", err)
		return exitBadInput
	}
	reqs, err := audit.Requests(src, filter)
	if err != nil {
		fmt.Fprintf(stderr, "pipeguard audit summary: %v\n", err)
		return exitBadInput
	}
	if err := audit.WriteSummary(stdout, audit.Summarize(reqs, *top)); err != nil {
		fmt.Fprintf(stderr, "pipeguard audit summary: %v\n", err)
		return exitBadInput
	}
	return exitOK
}
