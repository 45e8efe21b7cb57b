package review

import (
	"fmt"
	"io"
	"sort"
	"text/tabwriter"
	"time"

	"github.com/pipeguard/pipeguard/agent/audit"
)

// Summary counts requests per caller, method and decision.
type Summary struct {
	Total, Allowed, Denied, Incomplete int
	From, To                           time.Time
	Rows                               []SummaryRow
	TopDenied                          []SummaryRow
}

// SummaryRow is one count.
type SummaryRow struct {
	Caller, Method, Decision, Rule string
	Count                          int
}

// summaryCaller names a caller for aggregation: its pod and service
// account when known, else its username.
func summaryCaller(u audit.UserInfo) string {
	if pod := Pod(u); pod != "" {
		if sa := u.ExtraValue(audit.ExtraServiceAccount); sa != "" {
			return pod + " (sa " + sa + ")"
		}
		return pod
	}
	return u.Username
}

// Summarize aggregates requests; topN bounds TopDenied.
func Summarize(reqs []Request, topN int) Summary {
	s := Summary{}
	rows := map[SummaryRow]int{}
	denied := map[SummaryRow]int{}
	for _, r := range reqs {
		e := &r.Event
		t := e.RequestReceivedTimestamp.Time
		if s.From.IsZero() || t.Before(s.From) {
			s.From = t
		}
		if t.After(s.To) {
			s.To = t
		}
		s.Total++
		key := SummaryRow{Caller: summaryCaller(e.User), Method: MethodLabel(e), Decision: Outcome(r)}
		rows[key]++
		switch {
		case r.Incomplete:
			s.Incomplete++
		case e.Annotation(audit.AnnotationDecision) == audit.DecisionDeny:
			s.Denied++
			d := key
			d.Rule = e.Annotation(audit.AnnotationRule)
			denied[d]++
		default:
			s.Allowed++
		}
	}
	s.Rows = sortedRows(rows, 0)
	s.TopDenied = sortedRows(denied, topN)
	return s
}

func sortedRows(m map[SummaryRow]int, limit int) []SummaryRow {
	out := make([]SummaryRow, 0, len(m))
	for k, n := range m {
		k.Count = n
		out = append(out, k)
	}
	sort.Slice(out, func(i, j int) bool {
		a, b := out[i], out[j]
		if a.Count != b.Count {
			return a.Count > b.Count
		}
		return a.Caller+a.Method+a.Decision+a.Rule < b.Caller+b.Method+b.Decision+b.Rule
	})
	if limit > 0 && len(out) > limit {
		out = out[:limit]
	}
	return out
}

// WriteSummary writes a summary as readable tables.
func WriteSummary(w io.Writer, s Summary) error {
	if s.Total == 0 {
		_, err := fmt.Fprintln(w, "no requests match")
		return err
	}
	fmt.Fprintf(w, "%d requests from %s to %s: %d allowed, %d denied, %d incomplete\n\n", s.Total,
		s.From.UTC().Format(time.RFC3339), s.To.UTC().Format(time.RFC3339), s.Allowed, s.Denied, s.Incomplete)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "CALLER\tMETHOD\tDECISION\tCOUNT")
	for _, r := range s.Rows {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\n", r.Caller, r.Method, r.Decision, r.Count)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if len(s.TopDenied) == 0 {
		return nil
	}
	fmt.Fprintln(w, "\nTop denied:")
	tw = tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "CALLER\tMETHOD\tRULE\tCOUNT")
	for _, r := range s.TopDenied {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\n", r.Caller, r.Method, r.Rule, r.Count)
	}
	return tw.Flush()
}
