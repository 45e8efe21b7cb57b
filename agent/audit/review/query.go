package review

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/pipeguard/pipeguard/agent/audit"
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
func (f Filter) Match(e *audit.Event) bool {
	t := e.RequestReceivedTimestamp.Time
	if !f.Since.IsZero() && t.Before(f.Since) || !f.Until.IsZero() && !t.Before(f.Until) {
		return false
	}
	u := e.User
	if f.Namespace != "" && u.ExtraValue(audit.ExtraNamespace) != f.Namespace {
		return false
	}
	if f.Pod != "" {
		ns, name, hasNS := strings.Cut(f.Pod, "/")
		if !hasNS {
			name, ns = ns, ""
		}
		if u.ExtraValue(audit.ExtraPodName) != name || hasNS && u.ExtraValue(audit.ExtraNamespace) != ns {
			return false
		}
	}
	if f.Caller != "" && !matchCaller(f.Caller, u) {
		return false
	}
	if f.Method != "" && !matchMethod(f.Method, e) {
		return false
	}
	if f.Decision != "" && !strings.EqualFold(e.Annotation(audit.AnnotationDecision), f.Decision) {
		return false
	}
	return true
}

func matchCaller(c string, u audit.UserInfo) bool {
	if strings.Contains(strings.ToLower(u.Username), strings.ToLower(c)) || c == u.ExtraValue(audit.ExtraPID) {
		return true
	}
	sa, ns := u.ExtraValue(audit.ExtraServiceAccount), u.ExtraValue(audit.ExtraNamespace)
	return sa != "" && (c == sa || c == ns+":"+sa)
}

func matchMethod(m string, e *audit.Event) bool {
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
	audit.Record
	Incomplete bool
}

// Requests reads the request records of src that pass f, one per request:
// the completion record, or the write-ahead record of a request that never
// completed. Checkpoints and invalid lines are skipped (Verify reports them).
func Requests(src Source, f Filter) ([]Request, error) {
	var out []Request
	pending := map[string]int{} // auditID -> index of a write-ahead record
	err := src.each(func(r audit.Record) error {
		if r.Err != nil || r.Torn || r.Event.IsCheckpoint() {
			return nil
		}
		switch r.Event.Stage {
		case audit.StageRequestReceived:
			pending[r.Event.AuditID] = len(out)
			out = append(out, Request{Record: r, Incomplete: true})
		case audit.StageResponseComplete:
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
func Pod(u audit.UserInfo) string {
	if name := u.ExtraValue(audit.ExtraPodName); name != "" {
		return u.ExtraValue(audit.ExtraNamespace) + "/" + name
	}
	if uid := u.ExtraValue(audit.ExtraPodUID); uid != "" {
		return "uid:" + uid
	}
	return ""
}

// CallerLabel names the caller in tables: its username and pid.
func CallerLabel(u audit.UserInfo) string {
	if pid := u.ExtraValue(audit.ExtraPID); pid != "" {
		return u.Username + " pid " + pid
	}
	return u.Username
}

// MethodLabel is "group version Method".
func MethodLabel(e *audit.Event) string {
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
	return strings.ToUpper(r.Event.Annotation(audit.AnnotationDecision))
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
	code := e.Annotation(audit.AnnotationGRPCCode)
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

func detail(e *audit.Event) string {
	if rule := e.Annotation(audit.AnnotationRule); rule != "" {
		return "[" + rule + "] " + oneLine(e.Annotation(audit.AnnotationReason))
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
