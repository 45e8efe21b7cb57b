package audit

import (
	"fmt"
	"io"
	"sort"
	"strings"
	"text/tabwriter"
	"time"
)

// Filter selects request records. Empty fields match everything.
type Filter struct {
	// Since and Until bound the time the request was received.
	Since, Until time.Time
	// Pod is a pod name, or namespace/name.
	Pod string
	// Namespace is the caller's pod namespace.
	Namespace string
	// Caller matches the username (substring), the pid, or the service
	// account (name or namespace:name).
	Caller string
	// Method is a method name ("Mkdir"), group/method
	// ("filesystem/Mkdir") or the full gRPC method.
	Method string
	// Decision is allow or deny.
	Decision string
}

// Match reports whether a request record passes the filter.
func (f Filter) Match(e *Event) bool {
	t := e.RequestReceivedTimestamp.Time
	if !f.Since.IsZero() && t.Before(f.Since) || !f.Until.IsZero() && !t.Before(f.Until) {
		return false
	}
	u := e.User
	if f.Namespace != "" && u.ExtraValue(ExtraNamespace) != f.Namespace {
		return false
	}
	if f.Pod != "" {
		ns, name, hasNS := strings.Cut(f.Pod, "/")
		if !hasNS {
			name, ns = ns, ""
		}
		if u.ExtraValue(ExtraPodName) != name || hasNS && u.ExtraValue(ExtraNamespace) != ns {
			return false
		}
	}
	if f.Caller != "" && !matchCaller(f.Caller, u) {
		return false
	}
	if f.Method != "" && !matchMethod(f.Method, e) {
		return false
	}
	if f.Decision != "" && !strings.EqualFold(e.Annotation(AnnotationDecision), f.Decision) {
		return false
	}
	return true
}

func matchCaller(c string, u UserInfo) bool {
	if strings.Contains(strings.ToLower(u.Username), strings.ToLower(c)) || c == u.ExtraValue(ExtraPID) {
		return true
	}
	sa, ns := u.ExtraValue(ExtraServiceAccount), u.ExtraValue(ExtraNamespace)
	return sa != "" && (c == sa || c == ns+":"+sa)
}

func matchMethod(m string, e *Event) bool {
	if strings.EqualFold(m, e.RequestURI) || strings.EqualFold(m, e.Verb) {
		return true
	}
	group, method, ok := strings.Cut(m, "/")
	return ok && e.ObjectRef != nil && strings.EqualFold(group, e.ObjectRef.Resource) && strings.EqualFold(method, e.Verb)
}

// Request is one request as the log tells it: its final record, and
// whether it never completed (a write-ahead record with no completion,
// e.g. the agent was killed while the host operation ran).
type Request struct {
	Record
	Incomplete bool
}

// Requests reads the request records of src that pass f, one per request:
// the completion record, or the write-ahead record of a request that never
// completed. Checkpoints and invalid lines are skipped (Verify reports them).
func Requests(src Source, f Filter) ([]Request, error) {
	var out []Request
	pending := map[string]int{} // auditID -> index of a write-ahead record
	err := src.each(func(r Record) error {
		if r.Err != nil || r.Torn || r.Event.IsCheckpoint() {
			return nil
		}
		switch r.Event.Stage {
		case StageRequestReceived:
			pending[r.Event.AuditID] = len(out)
			out = append(out, Request{Record: r, Incomplete: true})
		case StageResponseComplete:
			if i, ok := pending[r.Event.AuditID]; ok {
				delete(pending, r.Event.AuditID)
				out[i] = Request{Record: r}
				return nil
			}
			out = append(out, Request{Record: r})
		}
		return nil
	})
	kept := out[:0]
	for _, r := range out {
		if f.Match(&r.Event) {
			kept = append(kept, r)
		}
	}
	return kept, err
}

// Pod returns "namespace/name" of the caller's pod, or "".
func Pod(u UserInfo) string {
	if name := u.ExtraValue(ExtraPodName); name != "" {
		return u.ExtraValue(ExtraNamespace) + "/" + name
	}
	if uid := u.ExtraValue(ExtraPodUID); uid != "" {
		return "uid:" + uid
	}
	return ""
}

// CallerLabel names the caller in tables: its username and pid.
func CallerLabel(u UserInfo) string {
	if pid := u.ExtraValue(ExtraPID); pid != "" {
		return u.Username + " pid " + pid
	}
	return u.Username
}

// MethodLabel is "group version Method".
func MethodLabel(e *Event) string {
	if e.ObjectRef == nil {
		return e.Verb
	}
	return e.ObjectRef.Resource + " " + e.ObjectRef.APIVersion + " " + e.Verb
}

// Outcome is the decision, upper case, or INCOMPLETE.
func Outcome(r Request) string {
	if r.Incomplete {
		return "INCOMPLETE"
	}
	return strings.ToUpper(r.Event.Annotation(AnnotationDecision))
}

// WriteTable writes requests as a table.
func WriteTable(w io.Writer, reqs []Request) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "TIME\tDECISION\tCODE\tMETHOD\tCALLER\tPOD\tDETAIL")
	for _, r := range reqs {
		WriteRow(tw, r)
	}
	return tw.Flush()
}

// WriteRow writes one request as a table row.
func WriteRow(w io.Writer, r Request) {
	e := &r.Event
	code := e.Annotation(AnnotationGRPCCode)
	if code == "" {
		code = "-"
	}
	pod := Pod(e.User)
	if pod == "" {
		pod = "-"
	}
	fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", e.RequestReceivedTimestamp.UTC().Format(time.RFC3339), Outcome(r), code,
		MethodLabel(e), CallerLabel(e.User), pod, detail(e))
}

func detail(e *Event) string {
	if rule := e.Annotation(AnnotationRule); rule != "" {
		return "[" + rule + "] " + oneLine(e.Annotation(AnnotationReason))
	}
	if e.ResponseStatus != nil && e.ResponseStatus.Message != "" {
		return oneLine(e.ResponseStatus.Message)
	}
	if e.ObjectRef != nil && e.ObjectRef.Name != "" {
		return e.ObjectRef.Name
	}
	return ""
}

func oneLine(s string) string { return strings.ReplaceAll(strings.ReplaceAll(s, "\n", " "), "\t", " ") }

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
func summaryCaller(u UserInfo) string {
	if pod := Pod(u); pod != "" {
		if sa := u.ExtraValue(ExtraServiceAccount); sa != "" {
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
		case e.Annotation(AnnotationDecision) == DecisionDeny:
			s.Denied++
			d := key
			d.Rule = e.Annotation(AnnotationRule)
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
