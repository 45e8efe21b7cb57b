package audit

import (
	"errors"
	"fmt"
	"net/http/httptest"
	"path/filepath"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/pipeguard/pipeguard/internal/testing/audittest"
	"github.com/pipeguard/pipeguard/internal/testing/badreceiver"
)

// fromPod is request i made by a caller in the pod uid.
func fromPod(i int, uid string) *Event {
	ev := request(i, DecisionAllow)
	ev.User.Extra = map[string][]string{ExtraPID: {"7"}, ExtraPodUID: {uid}}
	return ev
}

// TestWebhookBlockCallerShare: in blocking mode, with a receiver that
// never answers, a hostile pod's poisoned and many records fill only its
// share of the buffer: its requests are then refused with a message
// naming its share, while a driver's requests are still admitted and
// recorded. Completions (Attribute) count against the share and are
// never refused.
func TestWebhookBlockCallerShare(t *testing.T) {
	url := badreceiver.Silent(t)
	wh := newWebhook(t, WebhookOptions{ConfigFile: audittest.WebhookKubeconfig(t, url), BufferSize: 400, BatchMaxSize: 400, BatchMaxWait: time.Hour,
		Block: true, ShutdownTimeout: time.Second, Log: logr.Discard()})
	wh.Start()
	path := filepath.Join(t.TempDir(), "audit.log")
	admit := func(ev *Event, ahead int) error {
		if ev.Stage == StageResponseComplete && ev.Verb == "Complete" {
			wh.Attribute(ev, ahead)
			return nil
		}
		return wh.Admit(ev, ahead)
	}
	l := openLog(t, Options{Path: path, OnRecord: wh.Record, Admit: admit})
	const share = 400 / WebhookCallerShare
	want := fmt.Sprintf("audit webhook %s/audit: the share of caller pod:evil (1/%d of the buffer: %d records or %d bytes) is full, and in blocking mode its requests are refused until the receiver takes its records; other callers go on",
		url, WebhookCallerShare, share, DefaultWebhookBufferBytes/WebhookCallerShare)
	var admitted, refused int
	for i := range 3 {
		ev := poisoned(i)
		ev.User.Extra = fromPod(i, "evil").User.Extra
		if err := l.Append(ev, false); err != nil {
			t.Fatalf("poisoned record %d: %v", i, err)
		}
		admitted++
	}
	// A completion never refused, counted in the share.
	done := fromPod(3, "evil")
	done.Verb = "Complete"
	if err := l.Append(done, false); err != nil {
		t.Fatal(err)
	}
	for i := 4; i < 2000; i++ {
		err := l.Append(fromPod(i, "evil"), false)
		var rf *RefusedError
		switch {
		case err == nil:
			admitted++
		case errors.As(err, &rf) && err.Error() == want:
			refused++
		default:
			t.Fatalf("hostile call %d: %v, want nil or %q", i, err, want)
		}
	}
	if admitted+1 != share || refused != 2000-share {
		t.Fatalf("hostile pod: %d admitted (and one completion), %d refused; want its share of %d records, the rest refused", admitted, refused, share)
	}
	driver := map[string]bool{}
	for i := 5000; i < 5000+share; i++ {
		ev := fromPod(i, "csi-driver")
		if err := l.Append(ev, true); err != nil {
			t.Fatalf("the driver's call %d refused while a hostile pod is at its share: %v", i, err)
		}
		driver[ev.AuditID] = true
	}
	// The driver's share is full now too: its next call is refused,
	// naming its own share.
	err := l.Append(fromPod(9999, "csi-driver"), false)
	if err == nil || err.Error() != fmt.Sprintf("audit webhook %s/audit: the share of caller pod:csi-driver (1/%d of the buffer: %d records or %d bytes) is full, and in blocking mode its requests are refused until the receiver takes its records; other callers go on",
		url, WebhookCallerShare, share, DefaultWebhookBufferBytes/WebhookCallerShare) {
		t.Fatalf("the driver past its share: %v", err)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	stopWithin(t, wh, 3*time.Second)
	ids, _ := seqsOf(t, path, "")
	for id := range driver {
		if _, ok := ids[id]; !ok {
			t.Fatalf("the driver's call %s is not in the log", id)
		}
	}
}

// TestWebhookBlockPoisonDoesNotRefuseOthers: in blocking mode, a hostile
// pod's three records too large for the receiver and its 2000 small ones
// never have a driver refused: the poisoned records are refused by the
// receiver one by one at once, not retried for minutes, and the driver's
// calls, between the hostile ones, are all admitted.
func TestWebhookBlockPoisonDoesNotRefuseOthers(t *testing.T) {
	lr := &limitedReceiver{rc: &receiver{}, limit: 8 << 10}
	srv := httptest.NewServer(lr)
	defer srv.Close()
	wh := newWebhook(t, WebhookOptions{ConfigFile: audittest.WebhookKubeconfig(t, srv.URL), BufferSize: 400, BatchMaxSize: 50, BatchMaxWait: time.Hour,
		InitialBackoff: time.Hour, Block: true, Log: logr.Discard()})
	l := openLog(t, Options{Path: filepath.Join(t.TempDir(), "audit.log"), OnRecord: wh.Record, Admit: wh.Admit})
	wh.ReportTo(l)
	wh.Start()
	for i := range 3 {
		ev := poisoned(i)
		ev.User.Extra = fromPod(i, "evil").User.Extra
		if err := l.Append(ev, false); err != nil {
			t.Fatal(err)
		}
	}
	for i := 3; i < 2003; i++ {
		_ = l.Append(fromPod(i, "evil"), false) // refused past its share, or not
		if i%40 == 0 {
			if err := l.Append(fromPod(10000+i, "csi-driver"), true); err != nil {
				t.Fatalf("the driver's call refused after %d hostile calls: %v", i, err)
			}
		}
	}
	waitFor(t, "the three poisoned records to be refused", func() bool { return testutil.ToFloat64(wh.rejected) == 3 })
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	stopWithin(t, wh, 5*time.Second)
}

// TestWebhookBlockStagedDenialsTakeNoRoom: the denials of a caller past
// its share, written in the same batch as a request's record, never take
// room in the buffer. So a hostile pod's burst of refused calls, which
// the log writes together, neither has the driver's next call refused
// for a full buffer nor changes what the hostile pod is told.
func TestWebhookBlockStagedDenialsTakeNoRoom(t *testing.T) {
	url := badreceiver.Silent(t)
	wh := newWebhook(t, WebhookOptions{ConfigFile: audittest.WebhookKubeconfig(t, url), BufferSize: 10, BatchMaxSize: 10, BatchMaxWait: time.Hour,
		Block: true, ShutdownTimeout: time.Second, Log: logr.Discard()})
	wh.Start()
	defer stopWithin(t, wh, 3*time.Second)
	share := 10 / WebhookCallerShare
	var seq uint64
	// The hostile pod's share is queued.
	for i := range share {
		if err := wh.Admit(fromPod(i, "evil"), 0); err != nil {
			t.Fatalf("hostile call %d within its share: %v", i, err)
		}
		seq++
		wh.Record(seq, []byte(fmt.Sprintf(`{"auditID":"%d"}`, i)))
	}
	// Its next calls are refused, and their denials are staged together,
	// as many as would fill the rest of the buffer.
	want := fmt.Sprintf("audit webhook %s/audit: the share of caller pod:evil (1/%d of the buffer: %d records or %d bytes) is full, and in blocking mode its requests are refused until the receiver takes its records; other callers go on",
		url, WebhookCallerShare, share, DefaultWebhookBufferBytes/WebhookCallerShare)
	ahead := 0
	for i := share; i < 10; i++ {
		if err := wh.Admit(fromPod(i, "evil"), ahead); err == nil || err.Error() != want {
			t.Fatalf("hostile call %d with %d of its denials staged ahead: %v, want %q", i, ahead, err, want)
		}
		ahead++ // the request's denial is staged in its place
	}
	if err := wh.Admit(fromPod(100, "csi-driver"), ahead); err != nil {
		t.Fatalf("the driver's call behind %d staged denials of a hostile pod refused: %v", ahead, err)
	}
}
