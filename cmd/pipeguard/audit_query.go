package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"text/tabwriter"
	"time"

	"github.com/pipeguard/pipeguard/agent/audit"
)

// followPoll is how often --follow looks for new records.
const followPoll = 250 * time.Millisecond

func auditQuery(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("pipeguard audit query", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var ff filterFlags
	ff.register(fs)
	output := fs.String("o", "table", "output: table, or json (the records as written, one per line)")
	follow := fs.Bool("follow", false, "keep printing requests as the agent records them (PATH must be the --audit-log-path file)")
	fs.Usage = func() {
		fmt.Fprint(stderr, "Usage: pipeguard audit query [PATH|-] [flags]\n\nLists the requests of a pipeguard-agent audit log, one per request:\nits completion, or its write-ahead record marked INCOMPLETE when it never\ncompleted.\n"+auditSourceHelp+"\nFlags:\n")
		fs.PrintDefaults()
	}
	if code, ok := parseFlagSet(fs, args); !ok {
		return code
	}
	filter, err := ff.filter(time.Now())
	if err != nil {
		fmt.Fprintf(stderr, "pipeguard audit query: %v\n", err)
		return exitBadInput
	}
	if *output != "table" && *output != "json" {
		fmt.Fprintf(stderr, "pipeguard audit query: -o %q: want table or json\n", *output)
		return exitBadInput
	}
	if *follow {
		return queryFollow(fs, filter, *output, stdout, stderr)
	}
	src, _, err := auditSource(fs, stdin)
	if err != nil {
		fmt.Fprintf(stderr, "pipeguard audit query: %v\n", err)
		return exitBadInput
	}
	reqs, err := audit.Requests(src, filter)
	if err != nil {
		fmt.Fprintf(stderr, "pipeguard audit query: %v\n", err)
		return exitBadInput
	}
	if *output == "json" {
		for _, r := range reqs {
			stdout.Write(append(r.Raw, '\n'))
		}
		return exitOK
	}
	if err := audit.WriteTable(stdout, reqs); err != nil {
		fmt.Fprintf(stderr, "pipeguard audit query: %v\n", err)
		return exitBadInput
	}
	return exitOK
}

// queryFollow prints completed requests of the current log file as they
// are written, until interrupted.
func queryFollow(fs *flag.FlagSet, filter audit.Filter, output string, stdout, stderr io.Writer) int {
	if fs.NArg() != 1 || fs.Arg(0) == "-" {
		fmt.Fprintln(stderr, "pipeguard audit query: --follow needs PATH, the agent's --audit-log-path file")
		return exitBadInput
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	return follow(ctx, fs.Arg(0), filter, output, stdout, stderr)
}

func follow(ctx context.Context, path string, filter audit.Filter, output string, stdout, stderr io.Writer) int {
	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	if output == "table" {
		fmt.Fprintln(tw, "TIME\tDECISION\tCODE\tMETHOD\tCALLER\tPOD\tDETAIL")
		tw.Flush()
	}
	err := audit.Follow(ctx, path, followPoll, func(r audit.Record) error {
		if r.Err != nil || r.Torn || r.Event.IsCheckpoint() || r.Event.Stage != audit.StageResponseComplete || !filter.Match(&r.Event) {
			return nil
		}
		if output == "json" {
			_, err := stdout.Write(append(r.Raw, '\n'))
			return err
		}
		audit.WriteRow(tw, audit.Request{Record: r})
		return tw.Flush()
	})
	if err != nil {
		fmt.Fprintf(stderr, "pipeguard audit query: %v\n", err)
		return exitBadInput
	}
	return exitOK
}
