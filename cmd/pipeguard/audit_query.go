package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/spf13/cobra"
	"sigs.k8s.io/yaml"

	"github.com/pipeguard/pipeguard/agent/audit"
	"github.com/pipeguard/pipeguard/agent/audit/review"
)

// followPoll is how often --follow looks for new records.
const followPoll = 250 * time.Millisecond

// queryOptions are the flags of pipeguard audit query.
type queryOptions struct {
	filters filterFlags
	output  string
	follow  bool
	args    []string
}

func newAuditQueryCommand(name string, s streams) *cobra.Command {
	o := &queryOptions{}
	c := &cobra.Command{
		Use:   "query [PATH|-]",
		Short: "List the requests of an audit log",
		Long: `Lists the requests of a pipeguard-agent audit log, one per request: its
completion, or its write-ahead record marked INCOMPLETE when it never
completed.

` + auditSourceHelp,
		Example: examples(name, `
  # Denied requests of the last hour
  %[1]s audit query /var/log/pipeguard/audit.log --decision deny --since 1h

  # The requests of one pod, as the records were written (one JSON object per line)
  %[1]s audit query /var/log/pipeguard/audit.log --pod kube-system/csi-node-x -o json

  # Keep printing requests as the agent records them
  %[1]s audit query /var/log/pipeguard/audit.log --follow`),
		Args: cobra.MaximumNArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			o.args = args
			if err := checkOutput(o.output, outputTable, outputJSON, outputYAML); err != nil {
				return err
			}
			return o.run(s)
		},
	}
	o.filters.register(c)
	addOutputFlag(c, &o.output, "json is the records as written, one per line; yaml the same, one document each", outputTable, outputJSON, outputYAML)
	c.Flags().BoolVar(&o.follow, "follow", false, "keep printing requests as the agent records them (PATH must be the --audit-log-path file)")
	return c
}

func (o *queryOptions) run(s streams) error {
	filter, err := o.filters.filter(time.Now())
	if err != nil {
		return usageFailure("%v", err)
	}
	if o.follow {
		if len(o.args) != 1 || o.args[0] == "-" {
			return usageFailure("--follow needs PATH, the agent's --audit-log-path file")
		}
		ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
		defer stop()
		if code := follow(ctx, o.args[0], filter, o.output, s.Out, s.ErrOut); code != exitOK {
			return exitCode(code)
		}
		return nil
	}
	src, err := auditSource(o.args, s.In)
	if err != nil {
		return inputFailure(err)
	}
	reqs, err := review.Requests(src, filter)
	if err != nil {
		return inputFailure(err)
	}
	switch o.output {
	case outputJSON, outputYAML:
		for _, r := range reqs {
			if err := writeRecord(s.Out, o.output, r.Raw); err != nil {
				return inputFailure(err)
			}
		}
		return nil
	}
	if err := review.WriteTable(s.Out, reqs); err != nil {
		return inputFailure(err)
	}
	return nil
}

// writeRecord writes one record as written (a JSON line), or as a YAML
// document.
func writeRecord(w io.Writer, format string, raw []byte) error {
	if format == outputJSON {
		_, err := w.Write(append(raw, '\n'))
		return err
	}
	b, err := yaml.JSONToYAML(raw)
	if err != nil {
		return err
	}
	_, err = w.Write(append([]byte("---\n"), b...))
	return err
}

// follow prints completed requests of the current log file as they are
// written, until ctx ends.
func follow(ctx context.Context, path string, filter review.Filter, output string, stdout, stderr io.Writer) int {
	rows := &alignedRows{w: stdout, widths: followWidths}
	if output == outputTable {
		if err := rows.write("TIME\tDECISION\tCODE\tMETHOD\tCALLER\tPOD\tDETAIL\n"); err != nil {
			fmt.Fprintf(stderr, "pipeguard audit query: %v\n", err)
			return exitBadInput
		}
	}
	err := review.Follow(ctx, path, followPoll, func(r audit.Record) error {
		if r.Err != nil || r.Torn || r.Event.IsCheckpoint() || r.Event.Stage != audit.StageResponseComplete || !filter.Match(&r.Event) {
			return nil
		}
		if output != outputTable {
			return writeRecord(stdout, output, r.Raw)
		}
		var row strings.Builder
		review.WriteRow(&row, review.Request{Record: r})
		return rows.write(row.String())
	})
	if err != nil {
		fmt.Fprintf(stderr, "pipeguard audit query: %v\n", err)
		return exitBadInput
	}
	return exitOK
}

// followWidths are the widths --follow starts its columns at: those of the
// usual values (an RFC 3339 time, ALLOW or DENY, a gRPC code, "group
// version Method", a caller such as a ServiceAccount's user name or
// "pipeguard:peer:uid:1000 pid 4242", namespace/pod), so that rows line up
// from the first.
var followWidths = []int{20, 8, 16, 36, 48, 36}

// alignedRows writes tab-separated rows as aligned columns one row at a
// time, for --follow, which cannot wait for the rows to come as a table
// does: a column is as wide as its start width or its widest cell so far,
// and the last column is not padded.
type alignedRows struct {
	w      io.Writer
	widths []int
}

func (a *alignedRows) write(line string) error {
	cells := strings.Split(strings.TrimSuffix(line, "\n"), "\t")
	if len(a.widths) < len(cells)-1 {
		a.widths = append(slices.Clone(a.widths), make([]int, len(cells)-1-len(a.widths))...)
	}
	var b strings.Builder
	for i, c := range cells {
		b.WriteString(c)
		if i == len(cells)-1 {
			break
		}
		n := utf8.RuneCountInString(c)
		a.widths[i] = max(a.widths[i], n)
		b.WriteString(strings.Repeat(" ", a.widths[i]-n+2))
	}
	b.WriteByte('\n')
	_, err := io.WriteString(a.w, b.String())
	return err
}
