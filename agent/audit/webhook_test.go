package audit

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus/testutil"
	auditv1 "k8s.io/apiserver/pkg/apis/audit/v1"

	"github.com/pipeguard/pipeguard/internal/testing/audittest"
)

// receiver is an audit webhook receiver as a cluster would run one: it
// decodes each batch with kube-apiserver's own audit types and saves the
// body as received.
type receiver struct {
	mu     sync.Mutex
	saved  bytes.Buffer
	items  []byte // the items, one line each, byte for byte as sent
	events []auditv1.Event
	fail   int // answer 503 to this many requests first
}

func (rc *receiver) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	rc.mu.Lock()
	defer rc.mu.Unlock()
	if rc.fail > 0 {
		rc.fail--
		http.Error(w, "receiver busy", http.StatusServiceUnavailable)
		return
	}
	var list auditv1.EventList
	if err := json.Unmarshal(body, &list); err != nil || list.Kind != "EventList" || list.APIVersion != "audit.k8s.io/v1" {
		http.Error(w, fmt.Sprintf("not an audit.k8s.io/v1 EventList: %v", err), http.StatusBadRequest)
		return
	}
	rc.events = append(rc.events, list.Items...)
	rc.saved.Write(body)
	var raw struct{ Items []json.RawMessage }
	_ = json.Unmarshal(body, &raw)
	for _, item := range raw.Items {
		rc.items = append(rc.items, item...)
		rc.items = append(rc.items, '\n')
	}
}

// lines returns the items received, each as its line in the log.
func (rc *receiver) lines() []byte {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return bytes.Clone(rc.items)
}

func TestWebhookSendsTheChainAsEventLists(t *testing.T) {
	rc := &receiver{fail: 2}
	srv := httptest.NewServer(rc)
	defer srv.Close()
	wh, err := NewWebhook(WebhookOptions{ConfigFile: audittest.WebhookKubeconfig(t, srv.URL), BatchMaxSize: 64, BatchMaxWait: 1 << 40, InitialBackoff: 1, Log: logr.Discard()})
	if err != nil {
		t.Fatal(err)
	}
	wh.Start()
	l := openLog(t, Options{Path: filepath.Join(t.TempDir(), "audit.log"), OnRecord: wh.Record})
	write(t, l, 0, 1000)
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	wh.Stop(context.Background())

	seq := l.Seq()
	if uint64(len(rc.events)) != seq || testutil.ToFloat64(wh.sent) != float64(seq) || testutil.ToFloat64(wh.failed) != 0 {
		t.Fatalf("receiver decoded %d events, sent %v, failed %v; the log holds %d records", len(rc.events), testutil.ToFloat64(wh.sent), testutil.ToFloat64(wh.failed), seq)
	}
	if rc.events[5].Annotations[AnnotationSeq] != "6" || rc.events[5].User.Username != "pipeguard:peer:uid:0" {
		t.Fatalf("event 6 as kube-apiserver's types read it: %+v", rc.events[5])
	}
	// What the receiver saved is the chain itself: package review
	// verifies it as EventLists.
	if rep := checkChain(t, "received", bytes.NewReader(rc.lines())); !rep.OK() || rep.Last != seq {
		t.Fatalf("the records received: ok=%v last=%d problems=%v", rep.OK(), rep.Last, rep.Problems)
	}
}

func TestWebhookOverflowIsCountedAndNeverBlocks(t *testing.T) {
	// The receiver is never reached: the sender is not started, as when
	// the receiver is down. Records beyond the buffer are dropped at once.
	wh, err := NewWebhook(WebhookOptions{ConfigFile: audittest.WebhookKubeconfig(t, "http://127.0.0.1:1"), BufferSize: 10, Log: logr.Discard()})
	if err != nil {
		t.Fatal(err)
	}
	l := openLog(t, Options{Path: filepath.Join(t.TempDir(), "audit.log"), OnRecord: wh.Record})
	write(t, l, 0, 100)
	if got := testutil.ToFloat64(wh.overflow); got != float64(l.Seq()-10) {
		t.Fatalf("overflow counted %v, want %d", got, l.Seq()-10)
	}
	l.Close()
}

func TestWebhookConfigErrors(t *testing.T) {
	_, err := NewWebhook(WebhookOptions{ConfigFile: filepath.Join(t.TempDir(), "missing")})
	if err == nil || !strings.Contains(err.Error(), "audit webhook config file") || !strings.Contains(err.Error(), "give a kubeconfig whose current context names the receiver") {
		t.Fatalf("missing config: %v", err)
	}
}
