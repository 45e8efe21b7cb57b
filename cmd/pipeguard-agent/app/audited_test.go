package app

import (
	"context"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"

	"github.com/go-logr/logr"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/pipeguard/pipeguard/agent/audit"
	"github.com/pipeguard/pipeguard/agent/audit/review"
	"github.com/pipeguard/pipeguard/agent/gate"
	"github.com/pipeguard/pipeguard/agent/guard"
)

// auditSource is the audit log an agent started by startAudited writes.
type auditSource struct{ path string }

// startAudited starts an agent whose requests are gated by the shipped
// rules alone and audited into a log in a temp dir.
func startAudited(t testing.TB, o Options) (*running, auditSource) {
	t.Helper()
	engine, err := gate.New(context.Background(), gate.Options{Log: logr.Discard()})
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "audit", "audit.log")
	log, err := audit.Open(audit.Options{Path: path, Log: logr.Discard()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { log.Close() })
	o.Guard = &guard.Options{Gate: engine, Audit: log}
	return start(t, o), auditSource{path: path}
}

// refusals tracks the calls an agent refused, by audit ID, with the rule
// expected to refuse each. It is safe for concurrent use.
type refusals struct {
	mu    sync.Mutex
	n     int               // refused calls
	rules map[string]string // audit ID -> rule expected; "" for any rule
}

// isRefusal reports whether err is an answer refusing the call:
// PermissionDenied or InvalidArgument.
func isRefusal(err error) bool {
	c := status.Code(err)
	return c == codes.PermissionDenied || c == codes.InvalidArgument
}

// call makes a call, passing it the options that ask for and capture the
// audit-id response header, and when the agent refuses it notes the call's audit ID with the
// rule expected ("" for any). It returns the call's error.
func (r *refusals) call(rule string, f func(...grpc.CallOption) error) error {
	var md metadata.MD
	err := f(grpc.Header(&md), askAuditID)
	if isRefusal(err) {
		r.mu.Lock()
		defer r.mu.Unlock()
		r.n++
		if r.rules == nil {
			r.rules = map[string]string{}
		}
		for _, id := range md.Get(guard.AuditIDHeader) {
			r.rules[id] = rule
		}
	}
	return err
}

// count returns how many calls were refused.
func (r *refusals) count() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.n
}

// wantDenials fails unless the deny records that `pipeguard audit query
// --decision deny` lists are exactly the refused calls, one each, every one
// with a rule and, where one is expected, that rule, and unless the log
// verifies. It returns the deny records.
func (s auditSource) wantDenials(t testing.TB, r *refusals) []review.Request {
	t.Helper()
	r.mu.Lock()
	defer r.mu.Unlock()
	files, err := audit.Files(s.path)
	if err != nil {
		t.Fatal(err)
	}
	reqs, err := review.Requests(review.Source{Paths: files}, review.Filter{Decision: audit.DecisionDeny})
	if err != nil {
		t.Fatal(err)
	}
	if len(reqs) != r.n {
		t.Errorf("the deny query lists %d requests, want the %d refused calls", len(reqs), r.n)
	}
	if len(r.rules) != r.n {
		t.Errorf("%d refused calls, %d of them answered with an audit ID", r.n, len(r.rules))
	}
	for _, q := range reqs {
		id, rule := q.Event.AuditID, q.Event.Annotation(audit.AnnotationRule)
		want, ok := r.rules[id]
		switch {
		case !ok:
			t.Errorf("deny record %s (%s %s) is not a refused call", id, q.Event.Verb, rule)
		case rule == "":
			t.Errorf("deny record %s (%s) has no rule: %v", id, q.Event.Verb, q.Event.Annotations)
		case want != "" && rule != want:
			t.Errorf("deny record %s (%s) has rule %s, want %s", id, q.Event.Verb, rule, want)
		}
		if q.Incomplete || review.Outcome(q) != "DENY" {
			t.Errorf("deny record %s (%s): incomplete %v, outcome %s", id, q.Event.Verb, q.Incomplete, review.Outcome(q))
		}
	}
	// Each refused call has exactly one deny record in the log.
	denies := map[string]int{}
	for _, f := range files {
		fh, err := os.Open(f)
		if err != nil {
			t.Fatal(err)
		}
		audit.Scan(fh, f, func(rec audit.Record) error {
			if rec.Err == nil && !rec.Event.IsCheckpoint() && rec.Event.Annotation(audit.AnnotationDecision) == audit.DecisionDeny {
				denies[rec.Event.AuditID]++
			}
			return nil
		})
		fh.Close()
	}
	for _, id := range slices.Sorted(maps.Keys(r.rules)) {
		if denies[id] != 1 {
			t.Errorf("refused call %s has %d deny records, want 1", id, denies[id])
		}
	}
	if rep := verifyLog(t, s.path); !rep.OK() {
		t.Errorf("audit verify: %v", rep.Problems)
	}
	return reqs
}
