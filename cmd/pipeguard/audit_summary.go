package main

import (
	"time"

	"github.com/spf13/cobra"

	"github.com/pipeguard/pipeguard/agent/audit/review"
)

// summaryOptions are the flags of pipeguard audit summary.
type summaryOptions struct {
	filters filterFlags
	top     int
	output  string
	args    []string
}

func newAuditSummaryCommand(name string, s streams) *cobra.Command {
	o := &summaryOptions{}
	c := &cobra.Command{
		Use:   "summary [PATH|-]",
		Short: "Count the requests of an audit log per caller, method and decision",
		Long: `Counts requests per caller, method and decision, and lists the most
denied callers with the rule that denied them.

` + auditSourceHelp,
		Example: examples(name, `
  %[1]s audit summary /var/log/pipeguard/audit.log
  %[1]s audit summary /var/log/pipeguard/audit.log --since 24h --top 5 -o json`),
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
	c.Flags().IntVar(&o.top, "top", 10, "list the `N` most denied caller, method and rule combinations under \"Top denied\"")
	addOutputFlag(c, &o.output, "json and yaml hold the same counts", outputTable, outputJSON, outputYAML)
	return c
}

// summaryView is what -o json and -o yaml print.
type summaryView struct {
	Total      int          `json:"total"`
	Allowed    int          `json:"allowed"`
	Denied     int          `json:"denied"`
	Incomplete int          `json:"incomplete"`
	From       *time.Time   `json:"from,omitempty"`
	To         *time.Time   `json:"to,omitempty"`
	Rows       []summaryRow `json:"rows"`
	TopDenied  []summaryRow `json:"topDenied"`
}

type summaryRow struct {
	Caller   string `json:"caller"`
	Method   string `json:"method"`
	Decision string `json:"decision,omitempty"`
	Rule     string `json:"rule,omitempty"`
	Count    int    `json:"count"`
}

func (o *summaryOptions) run(s streams) error {
	filter, err := o.filters.filter(time.Now())
	if err != nil {
		return usageFailure("%v", err)
	}
	src, err := auditSource(o.args, s.In)
	if err != nil {
		return inputFailure(err)
	}
	reqs, err := review.Requests(src, filter)
	if err != nil {
		return inputFailure(err)
	}
	sum := review.Summarize(reqs, o.top)
	if o.output == outputTable {
		if err := review.WriteSummary(s.Out, sum); err != nil {
			return inputFailure(err)
		}
		return nil
	}
	v := summaryView{Total: sum.Total, Allowed: sum.Allowed, Denied: sum.Denied, Incomplete: sum.Incomplete,
		Rows: rows(sum.Rows), TopDenied: rows(sum.TopDenied)}
	if !sum.From.IsZero() {
		from, to := sum.From.UTC(), sum.To.UTC()
		v.From, v.To = &from, &to
	}
	return printStructured(s.Out, o.output, v)
}

func rows(in []review.SummaryRow) []summaryRow {
	out := make([]summaryRow, 0, len(in))
	for _, r := range in {
		out = append(out, summaryRow{Caller: r.Caller, Method: r.Method, Decision: r.Decision, Rule: r.Rule, Count: r.Count})
	}
	return out
}
