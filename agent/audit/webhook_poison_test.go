package audit

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/pipeguard/pipeguard/internal/testing/audittest"
	"github.com/pipeguard/pipeguard/internal/testing/badreceiver"
)

// limitedReceiver refuses, with 413, every body larger than limit bytes,
// as a receiver behind a request size limit does, and hands the others to
// rc.
type limitedReceiver struct {
	rc       *receiver
	limit    int64
	requests atomic.Int64
}

func (lr *limitedReceiver) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	lr.requests.Add(1)
	if r.ContentLength > lr.limit {
		_, _ = io.Copy(io.Discard, r.Body)
		http.Error(w, fmt.Sprintf("body of %d bytes over the limit of %d", r.ContentLength, lr.limit), http.StatusRequestEntityTooLarge)
		return
	}
	lr.rc.ServeHTTP(w, r)
}

// poisoned is a record too large for a receiver that takes 8 KiB: a
// caller chose a request of 32 KiB.
func poisoned(i int) *Event { return bigRecord(i, 32<<10) }

// bigRecord is a record of at least n bytes (n under MaxRecordBytes) made
// of strings within MaxRecordString: a request body of many fields, as a
// Request-level record of a large request holds.
func bigRecord(i, n int) *Event {
	ev := request(i, DecisionAllow)
	ev.Level = LevelRequest
	ev.RequestObject = map[string]any{}
	for f := 0; f*(MaxRecordString/2) < n; f++ {
		ev.RequestObject[fmt.Sprintf("field%03d", f)] = strings.Repeat("p", MaxRecordString/2)
	}
	return ev
}

// waitFor polls cond until it holds, failing the test after a minute.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	// Poll under a deadline for the condition; the pause only spares the CPU.
	for deadline := time.Now().Add(time.Minute); !cond(); time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("still waiting after a minute for %s", what)
		}
	}
}

// seqsOf maps the audit IDs of the records in the log at path to their
// sequence numbers, and lists its checkpoints of kind.
func seqsOf(t *testing.T, path, kind string) (map[string]uint64, []Record) {
	t.Helper()
	files, err := Files(path)
	if err != nil {
		t.Fatal(err)
	}
	ids := map[string]uint64{}
	var cps []Record
	for _, f := range files {
		if err := ScanFile(f, func(r Record) error {
			if r.Err != nil {
				return r.Err
			}
			if r.Event.Annotation(AnnotationCheckpoint) == kind {
				cps = append(cps, r)
			}
			ids[r.Event.AuditID] = r.Seq
			return nil
		}); err != nil {
			t.Fatal(err)
		}
	}
	return ids, cps
}

// TestWebhookPoisonedRecordsGoAlone: Mkdir X, then three records too
// large for the receiver in X's batch. The receiver refuses the batch
// with 413; the batch is split until each poisoned record is alone, X and
// every other record reach the receiver, and each poisoned record is
// reported on its own: a log line naming its seq, the rejected metric and
// a webhook-rejected checkpoint in the log, which reaches the receiver
// too.
func TestWebhookPoisonedRecordsGoAlone(t *testing.T) {
	lr := &limitedReceiver{rc: &receiver{}, limit: 8 << 10}
	srv := httptest.NewServer(lr)
	defer srv.Close()
	logs := &badreceiver.Log{}
	wh := newWebhook(t, WebhookOptions{ConfigFile: audittest.WebhookKubeconfig(t, srv.URL), BatchMaxSize: 20, BatchMaxBytes: 1 << 20,
		BatchMaxWait: time.Hour, InitialBackoff: time.Hour, Log: logs.Logger()})
	path := filepath.Join(t.TempDir(), "audit.log")
	l := openLog(t, Options{Path: path, OnRecord: wh.Record, Unsent: wh})
	wh.ReportTo(l)
	wh.Start()
	// The start checkpoint, X, three poisoned records and 15 more make a
	// full batch of 20.
	if err := l.Append(request(0, DecisionAllow), true); err != nil {
		t.Fatal(err)
	}
	for i := 1; i <= 3; i++ {
		if err := l.Append(poisoned(i), true); err != nil {
			t.Fatal(err)
		}
	}
	write(t, l, 4, 15)
	waitFor(t, "the three poisoned records to be reported", func() bool { return testutil.ToFloat64(wh.rejected) == 3 })
	// The checkpoints naming them make a batch of their own at shutdown.
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	stopWithin(t, wh, 5*time.Second)

	seqs, cps := seqsOf(t, path, "webhook-rejected")
	got := map[string]bool{}
	for _, line := range strings.Split(strings.TrimSpace(string(lr.rc.lines())), "\n") {
		r := ParseRecord("received", 0, []byte(line))
		if r.Err != nil {
			t.Fatalf("the receiver holds %q: %v", line, r.Err)
		}
		got[r.Event.AuditID] = true
	}
	if !got["id-0"] {
		t.Fatalf("Mkdir X (id-0, seq %d) did not reach the receiver; it holds %d records", seqs["id-0"], len(got))
	}
	for id := range seqs {
		poison := id == "id-1" || id == "id-2" || id == "id-3"
		if got[id] == poison {
			t.Errorf("record %s (seq %d) at the receiver: %v, want %v", id, seqs[id], got[id], !poison)
		}
	}
	if sent, want := testutil.ToFloat64(wh.sent), float64(len(seqs)-3); sent != want {
		t.Errorf("sent %v, want every record but the three poisoned: %v", sent, want)
	}
	// Splitting a batch of 20 with 3 records to find costs a bounded
	// number of requests: at most two per record.
	if n := lr.requests.Load(); n > 2*int64(len(seqs)) {
		t.Errorf("%d requests for %d records", n, len(seqs))
	}

	want := map[uint64]bool{seqs["id-1"]: true, seqs["id-2"]: true, seqs["id-3"]: true}
	lines := logs.With("audit record refused by the webhook receiver on its own: it is not sent, the other records of its batch are; the log file keeps it and a webhook-rejected checkpoint names it")
	if len(lines) != 3 {
		t.Fatalf("%d rejection log lines, want 3: %v", len(lines), logs.Lines())
	}
	wantErr := "audit webhook receiver " + srv.URL + "/audit answered 413 Request Entity Too Large: body of "
	for _, ln := range lines {
		if seq := uint64(ln["seq"].(float64)); !want[seq] {
			t.Errorf("rejection log line names seq %d, not a poisoned record's (%v)", seq, want)
		}
		if e, _ := ln["error"].(string); !strings.HasPrefix(e, wantErr) || !strings.HasSuffix(e, "over the limit of 8192") {
			t.Errorf("rejection log line error %q, want %q…over the limit of 8192", e, wantErr)
		}
	}
	if len(cps) != 3 {
		t.Fatalf("%d webhook-rejected checkpoints in the log, want 3", len(cps))
	}
	for _, cp := range cps {
		seq, _ := strconv.ParseUint(cp.Event.Annotation(AnnotationWebhookRejectedSeq), 10, 64)
		if !want[seq] || !strings.HasPrefix(cp.Event.Annotation(AnnotationWebhookRejectedReason), wantErr) {
			t.Errorf("checkpoint %s: %v", cp.Where(), cp.Event.Annotations)
		}
		if !got[cp.Event.AuditID] {
			t.Errorf("checkpoint %s did not reach the receiver", cp.Where())
		}
	}
	if rep := verify(t, path); !rep.OK() {
		t.Fatalf("the log: %v", rep.Problems)
	}
}

// TestWebhookRefusedCheckpointIsNotReportedAgain: a receiver that refuses
// every record gets each one reported once; the checkpoints naming them,
// refused in turn, are logged and not named by further checkpoints, so
// that reporting ends.
func TestWebhookRefusedCheckpointIsNotReportedAgain(t *testing.T) {
	lr := &limitedReceiver{rc: &receiver{}, limit: 0}
	srv := httptest.NewServer(lr)
	defer srv.Close()
	logs := &badreceiver.Log{}
	wh := newWebhook(t, WebhookOptions{ConfigFile: audittest.WebhookKubeconfig(t, srv.URL), BatchMaxSize: 4, BatchMaxWait: time.Hour, InitialBackoff: time.Hour, Log: logs.Logger()})
	l := openLog(t, Options{Path: filepath.Join(t.TempDir(), "audit.log"), OnRecord: wh.Record})
	wh.ReportTo(l)
	wh.Start()
	write(t, l, 0, 3) // with the start checkpoint, a batch of 4
	// 4 records, then their 4 checkpoints (a full batch), refused too.
	waitFor(t, "the records and their checkpoints to be refused", func() bool { return testutil.ToFloat64(wh.rejected) == 8 })
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	stopWithin(t, wh, 5*time.Second)
	if got := testutil.ToFloat64(wh.rejected); got != 9 {
		t.Fatalf("rejected %v, want the 4 records, their 4 checkpoints and the stop checkpoint", got)
	}
	_, cps := seqsOf(t, l.o.Path, "webhook-rejected")
	if len(cps) != 4 {
		t.Fatalf("%d webhook-rejected checkpoints, want one for each of the 4 records, none for a checkpoint", len(cps))
	}
	if n := len(logs.With("the checkpoint naming an audit record the webhook receiver refused could not be written; this line names it")); n != 1 {
		t.Fatalf("%d lines naming a record refused once the log closed, want 1 (the stop checkpoint): %v", n, logs.Lines())
	}
}

// TestWebhookBufferBytesBounded: records of 30 KiB each never take the
// buffer past its bytes, whatever the receiver does; the overflow names
// the bound reached, and a record larger than the whole buffer is dropped
// from the webhook, not queued.
func TestWebhookBufferBytesBounded(t *testing.T) {
	url := badreceiver.Silent(t)
	logs := &badreceiver.Log{}
	const limit = 200 << 10
	wh := newWebhook(t, WebhookOptions{ConfigFile: audittest.WebhookKubeconfig(t, url), BufferBytes: limit, BatchMaxSize: 1,
		InitialBackoff: time.Hour, ShutdownTimeout: time.Second, Log: logs.Logger()})
	wh.Start()
	l := openLog(t, Options{Path: filepath.Join(t.TempDir(), "audit.log"), OnRecord: wh.Record})
	var peak int64
	for i := range 20 {
		if err := l.Append(bigRecord(i, 30<<10), false); err != nil {
			t.Fatal(err)
		}
		peak = max(peak, wh.BufferedBytes())
	}
	if err := l.Append(bigRecord(99, limit+1), false); err != nil {
		t.Fatal(err)
	}
	peak = max(peak, wh.BufferedBytes())
	if peak > limit || peak < limit/2 {
		t.Fatalf("the buffer held %d bytes at most, want at most %d and more than half of it", peak, limit)
	}
	if got := testutil.ToFloat64(wh.overflow); got < 14 {
		t.Fatalf("overflow %v, want the records past the 6 or 7 the 200 KiB hold, and the huge one", got)
	}
	drops := logs.With("audit records dropped from the webhook; the log file keeps them")
	if want := "audit webhook " + url + "/audit: buffer of 204800 bytes full; the receiver is not keeping up"; len(drops) == 0 || drops[0]["error"] != want {
		t.Fatalf("overflow log lines %v, want the first saying %q", drops, want)
	}
	l.Close()
	stopWithin(t, wh, 3*time.Second)
	if got := wh.BufferedBytes(); got != 0 {
		t.Fatalf("%d bytes left buffered after Stop", got)
	}
}

// TestUnsentSet: the ranges of records not acknowledged, split and
// merged as records are sent, stay within MaxUnsentRanges.
func TestUnsentSet(t *testing.T) {
	var s unsentSet
	for seq := uint64(1); seq <= 10; seq++ {
		s.add(seq)
	}
	for _, seq := range []uint64{1, 4, 5, 10, 11} {
		s.remove(seq)
	}
	if got, n := s.within(1, 10); got != "2-3,6-9" || n != 6 {
		t.Fatalf("within = %q, %d; want 2-3,6-9, 6", got, n)
	}
	if got, _ := s.within(4, 5); got != "" {
		t.Fatalf("within(4, 5) = %q, want none", got)
	}
	if n := s.forget(7); n != 4 {
		t.Fatalf("forget(7) dropped %d, want 4", n)
	}
	if got, _ := s.within(1, 100); got != "8-9" {
		t.Fatalf("after forget(7): %q, want 8-9", got)
	}

	// Every other record sent: past MaxUnsentRanges, records join the
	// newest range (claimed unsent, never forgotten as sent).
	var big unsentSet
	for seq := uint64(1); seq <= 4*MaxUnsentRanges; seq += 2 {
		big.add(seq)
	}
	if len(big.r) != MaxUnsentRanges {
		t.Fatalf("%d ranges, want the bound %d", len(big.r), MaxUnsentRanges)
	}
	last := big.r[len(big.r)-1]
	big.remove(last.lo + 1)
	if len(big.r) != MaxUnsentRanges {
		t.Fatalf("a split past the bound: %d ranges", len(big.r))
	}
	if got, n := big.within(last.lo, last.hi); n != last.hi-last.lo+1 || !strings.HasPrefix(got, strconv.FormatUint(last.lo, 10)+"-") {
		t.Fatalf("the merged range reads %q (%d records), want all of %d-%d", got, n, last.lo, last.hi)
	}
	if got, _ := big.within(1, 4*MaxUnsentRanges); len(got) > MaxUnsentText+64 || !strings.HasSuffix(got, " more)") {
		t.Fatalf("a long list is %d bytes, ending %q", len(got), got[max(0, len(got)-40):])
	}
}

// backupsOf lists the rotated files of path.
func backupsOf(t *testing.T, path string) []string {
	t.Helper()
	b, err := Backups(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func fileSize(t *testing.T, f string) int64 {
	t.Helper()
	fi, err := os.Stat(f)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Size()
}
