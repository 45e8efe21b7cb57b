package audit

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/pipeguard/pipeguard/internal/testing/badreceiver"

	"github.com/pipeguard/pipeguard/internal/testing/audittest"
)

// appendAll appends n records from each of g goroutines and returns each
// record's error by its index. It fails the test when an append takes
// longer than bound, and gives up on appends still running after a
// minute.
func appendAll(t *testing.T, l *Log, g, n int, bound time.Duration) []error {
	t.Helper()
	return appendEach(t, l, g, n, bound, func(k int) *Event { return request(k, DecisionAllow) })
}

// appendEach is appendAll of the records mk makes.
func appendEach(t *testing.T, l *Log, g, n int, bound time.Duration, mk func(k int) *Event) []error {
	t.Helper()
	errs := make([]error, g*n)
	slow := make(chan string, g*n)
	var wg sync.WaitGroup
	for i := range g {
		wg.Go(func() {
			for j := range n {
				k := i*n + j
				start := time.Now()
				errs[k] = l.Append(mk(k), k%2 == 0)
				if d := time.Since(start); d > bound {
					slow <- fmt.Sprintf("append %d took %s", k, d)
				}
			}
		})
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(time.Minute):
		t.Fatalf("appends still running after a minute: the webhook holds the log")
	}
	close(slow)
	for s := range slow {
		t.Errorf("%s, more than %s", s, bound)
	}
	return errs
}

// stopWithin stops the webhook and fails the test unless Stop returns
// within limit.
func stopWithin(t *testing.T, wh *Webhook, limit time.Duration) {
	t.Helper()
	done := make(chan struct{})
	start := time.Now()
	go func() { wh.Stop(t.Context()); close(done) }()
	select {
	case <-done:
		if d := time.Since(start); d > limit {
			t.Errorf("Stop took %s, more than %s", d, limit)
		}
	case <-time.After(limit + 30*time.Second):
		t.Fatalf("Stop still running %s after it was called", limit+30*time.Second)
	}
}

func newWebhook(t *testing.T, o WebhookOptions) *Webhook {
	t.Helper()
	wh, err := NewWebhook(o)
	if err != nil {
		t.Fatal(err)
	}
	return wh
}

// TestWebhookReceiverCannotHoldTheLog: whatever the receiver does, 400
// records from 8 writers each take no time beyond the log's own, every
// record reaches the file and is accounted for (sent, overflow or failed),
// overflow is logged a bounded number of times, and Stop keeps its bound.
// Retries wait an hour, so only Stop can end them.
func TestWebhookReceiverCannotHoldTheLog(t *testing.T) {
	cases := map[string]struct {
		receiver func(testing.TB) string
		shutdown time.Duration
		// limit on Stop: a receiver that fails at once lets it return
		// long before its bound.
		stopWithin time.Duration
		notSent    []string // in the error of the shutdown log line, after the URL
	}{
		"accepts and never answers": {badreceiver.Silent, time.Second, 3 * time.Second, []string{" had not answered when the shutdown bound of 1s passed"}},
		"refuses connections":       {badreceiver.Refusing, WebhookShutdownTimeout, 5 * time.Second, []string{": Post ", "refused"}},
		"answers 500":               {badreceiver.Broken, WebhookShutdownTimeout, 5 * time.Second, []string{" answered 500 Internal Server Error: receiver broken"}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			url := tc.receiver(t) + "/audit"
			logs := &badreceiver.Log{}
			wh := newWebhook(t, WebhookOptions{ConfigFile: audittest.WebhookKubeconfig(t, strings.TrimSuffix(url, "/audit")), BufferSize: 10, BatchMaxSize: 1,
				InitialBackoff: time.Hour, ShutdownTimeout: tc.shutdown, Log: logs.Logger()})
			wh.Start()
			path := filepath.Join(t.TempDir(), "audit.log")
			l := openLog(t, Options{Path: path, OnRecord: wh.Record})
			for k, err := range appendAll(t, l, 8, 50, time.Second) {
				if err != nil {
					t.Fatalf("append %d: %v", k, err)
				}
			}
			if err := l.Close(); err != nil {
				t.Fatal(err)
			}
			stopWithin(t, wh, tc.stopWithin)

			sent, overflow, failed := testutil.ToFloat64(wh.sent), testutil.ToFloat64(wh.overflow), testutil.ToFloat64(wh.failed)
			if rep := verify(t, path); !rep.OK() || rep.Records != 402 {
				t.Fatalf("the log file: ok=%v records=%d (want the 400 records and 2 checkpoints) problems=%v", rep.OK(), rep.Records, rep.Problems)
			}
			if sent != 0 || overflow < 380 || sent+overflow+failed != float64(l.Seq()) {
				t.Fatalf("sent %v, overflow %v, failed %v: want none sent, most dropped, and every one of the %d records counted once", sent, overflow, failed, l.Seq())
			}

			drops := logs.With("audit records dropped from the webhook; the log file keeps them")
			var logged float64
			for _, d := range drops {
				logged += d["dropped"].(float64)
				if want := "audit webhook " + url + ": buffer of 10 records full; the receiver is not keeping up"; d["error"] != want {
					t.Errorf("overflow line error %q, want %q", d["error"], want)
				}
			}
			if len(drops) == 0 || len(drops) > 2 || logged != overflow {
				t.Errorf("%d overflow log lines counting %v records, want one when dropping starts and one at shutdown, counting all %v", len(drops), logged, overflow)
			}
			notSent := logs.With("audit records not sent to the webhook receiver at shutdown; the log file keeps them")
			if len(notSent) != 1 || notSent[0]["records"].(float64) != failed {
				t.Fatalf("shutdown log lines %v, want one counting the %v records not sent", notSent, failed)
			}
			msg, _ := notSent[0]["error"].(string)
			for _, want := range append([]string{"audit webhook receiver " + url}, tc.notSent...) {
				if !strings.Contains(msg, want) {
					t.Errorf("shutdown log line error %q does not contain %q", msg, want)
				}
			}
		})
	}
}

// TestWebhookRequestsTimeOut: a receiver that never answers costs each
// request RequestTimeout, and its batch is dropped after the retries.
func TestWebhookRequestsTimeOut(t *testing.T) {
	url := badreceiver.Silent(t)
	logs := &badreceiver.Log{}
	wh := newWebhook(t, WebhookOptions{ConfigFile: audittest.WebhookKubeconfig(t, url), BatchMaxSize: 1, InitialBackoff: time.Millisecond, Retries: 1,
		RequestTimeout: 100 * time.Millisecond, Log: logs.Logger()})
	wh.Start()
	wh.Record(1, []byte(`{"kind":"Event"}`+"\n"))
	// Poll under a deadline for the give-up counter; the pause only spares the CPU.
	for deadline := time.Now().Add(10 * time.Second); testutil.ToFloat64(wh.failed) == 0; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the batch was not given up 10s after it was queued, with two requests of 100ms; log: %v", logs.Lines())
		}
	}
	want := "audit webhook receiver " + url + "/audit did not answer within 100ms"
	for _, msg := range []string{
		"sending audit records to the webhook receiver failed; retrying",
		"audit records not sent to the webhook receiver after every retry; the log file keeps them",
	} {
		if got := logs.With(msg); len(got) != 1 || got[0]["error"] != want {
			t.Errorf("log lines %q: %v, want one with error %q", msg, got, want)
		}
	}
	stopWithin(t, wh, 5*time.Second)
}

// TestWebhookBlockRefusesAtOnce: in blocking mode a full buffer refuses
// the record's request at once with an error naming the receiver, and the
// log file holds the request as a deny in place of its record. Each
// request comes from a caller of its own, so that no caller's share is
// what refuses it.
func TestWebhookBlockRefusesAtOnce(t *testing.T) {
	url := badreceiver.Silent(t)
	wh := newWebhook(t, WebhookOptions{ConfigFile: audittest.WebhookKubeconfig(t, url), BufferSize: 10, BatchMaxSize: 1, Block: true,
		ShutdownTimeout: time.Second, Log: logr.Discard()})
	wh.Start()
	path := filepath.Join(t.TempDir(), "audit.log")
	l := openLog(t, Options{Path: path, OnRecord: wh.Record, Admit: wh.Admit})
	errs := appendEach(t, l, 8, 50, time.Second, func(k int) *Event {
		ev := request(k, DecisionAllow)
		SetDecision(ev.Annotations, true, "")
		ev.User.Extra = map[string][]string{ExtraPID: {strconv.Itoa(1000 + k)}}
		return ev
	})
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	stopWithin(t, wh, 3*time.Second)

	want := "audit webhook " + url + "/audit: buffer of 10 records full; the receiver is not keeping up, and in blocking mode requests are refused until it catches up"
	refused := map[string]bool{}
	for k, err := range errs {
		if err != nil {
			if err.Error() != want {
				t.Fatalf("append %d refused with %q, want %q", k, err, want)
			}
			refused[fmt.Sprintf("id-%d", k)] = true
		}
	}
	if len(refused) < 380 || len(refused) == len(errs) {
		t.Fatalf("%d of %d appends refused: want all but the first few, which the buffer holds", len(refused), len(errs))
	}

	rep := verify(t, path)
	if !rep.OK() || rep.Records != 402 {
		t.Fatalf("the log file: ok=%v records=%d problems=%v", rep.OK(), rep.Records, rep.Problems)
	}
	seen := map[string]bool{}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	err = Scan(f, path, func(r Record) error {
		e := r.Event
		if r.Err != nil || e.IsCheckpoint() {
			return r.Err
		}
		if seen[e.AuditID] {
			return fmt.Errorf("%s: a second record of %s", r.Where(), e.AuditID)
		}
		seen[e.AuditID] = true
		deny := e.Annotation(AnnotationDecision) == DecisionDeny
		switch {
		case deny != refused[e.AuditID]:
			return fmt.Errorf("%s: %s says %s, but its append was refused: %v", r.Where(), e.AuditID, e.Annotation(AnnotationDecision), refused[e.AuditID])
		case deny && (e.Stage != StageResponseComplete || e.Annotation(AnnotationRule) != RuleAuditUnavailable || e.Annotation(AnnotationReason) != want ||
			e.Annotation(AnnotationGRPCCode) != "Unavailable" || e.ResponseStatus == nil || e.ResponseStatus.Code != 503 || e.ResponseStatus.Message != want):
			return fmt.Errorf("%s: the denial of %s: stage %s, status %+v, annotations %v", r.Where(), e.AuditID, e.Stage, e.ResponseStatus, e.Annotations)
		case deny && (e.Annotation(AnnotationAuthorizationDecision) != AuthorizationForbid || e.Annotation(AnnotationAuthorizationReason) != "pipeguard-agent: denied by rule audit-unavailable"):
			return fmt.Errorf("%s: the denial of %s keeps the allowed record's authorization annotations: %v", r.Where(), e.AuditID, e.Annotations)
		case !deny && (e.Annotation(AnnotationAuthorizationDecision) != AuthorizationAllow || e.Annotation(AnnotationAuthorizationReason) != ReasonAllowed):
			return fmt.Errorf("%s: the allowed record %s lacks its authorization annotations: %v", r.Where(), e.AuditID, e.Annotations)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(seen) != len(errs) {
		t.Fatalf("%d requests in the log, %d appended", len(seen), len(errs))
	}
	// The denials find the buffer full too; no admitted record is dropped
	// (the stop checkpoint may be).
	if overflow := testutil.ToFloat64(wh.overflow); overflow < float64(len(refused)) || overflow > float64(len(refused)+1) {
		t.Fatalf("overflow %v, want the %d denials and at most the stop checkpoint", overflow, len(refused))
	}
}

// TestWebhookStopWithoutStart: records queued for a webhook that never
// started are tried once at Stop, and counted when the receiver fails.
func TestWebhookStopWithoutStart(t *testing.T) {
	wh := newWebhook(t, WebhookOptions{ConfigFile: audittest.WebhookKubeconfig(t, badreceiver.Refusing(t)), Log: logr.Discard()})
	for i := range 3 {
		wh.Record(uint64(i+1), []byte(`{"kind":"Event"}`+"\n"))
	}
	stopWithin(t, wh, 5*time.Second)
	if got := testutil.ToFloat64(wh.failed); got != 3 {
		t.Fatalf("failed %v, want the 3 records queued", got)
	}
	// A record after Stop is not sent, and counted.
	wh.Record(4, []byte(`{"kind":"Event"}`+"\n"))
	if got := testutil.ToFloat64(wh.failed); got != 4 {
		t.Fatalf("failed %v after a record past Stop, want 4", got)
	}
}
