package review

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/go-logr/logr"

	"github.com/pipeguard/pipeguard/agent/audit"

	"github.com/pipeguard/pipeguard/internal/testing/audittest"
)

// saver is an audit webhook receiver that saves every batch as received,
// as a receiver a cluster runs keeps them.
type saver struct {
	mu    sync.Mutex
	saved bytes.Buffer
}

func (s *saver) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.saved.Write(body)
}

func (s *saver) bytes() []byte {
	s.mu.Lock()
	defer s.mu.Unlock()
	return bytes.Clone(s.saved.Bytes())
}

// TestVerifyReadsWebhookEventLists verifies the EventLists a receiver of
// the agent's webhook backend saved, and finds an item changed there.
func TestVerifyReadsWebhookEventLists(t *testing.T) {
	rc := &saver{}
	srv := httptest.NewServer(rc)
	defer srv.Close()
	wh, err := audit.NewWebhook(audit.WebhookOptions{ConfigFile: audittest.WebhookKubeconfig(t, srv.URL), BatchMaxSize: 64, BatchMaxWait: 1 << 40, InitialBackoff: 1, Log: logr.Discard()})
	if err != nil {
		t.Fatal(err)
	}
	wh.Start()
	l := openLog(t, audit.Options{Path: filepath.Join(t.TempDir(), "audit.log"), OnRecord: wh.Record})
	write(t, l, 0, 1000)
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	wh.Stop(context.Background())
	seq := l.Seq()

	saved := rc.bytes()
	rep, err := Verify(Source{Reader: bytes.NewReader(saved), Name: "received"})
	if err != nil || !rep.OK() || rep.Last != seq || rep.First != 1 {
		t.Fatalf("verify of the received EventLists: err=%v ok=%v first=%d last=%d problems=%v", err, rep.OK(), rep.First, rep.Last, rep.Problems)
	}

	// An item changed at the receiver breaks the chain there.
	tampered := bytes.Replace(saved, []byte(`"id-7"`), []byte(`"id-8"`), 1)
	rep, _ = Verify(Source{Reader: bytes.NewReader(tampered), Name: "received"})
	if rep.OK() || !strings.Contains(rep.Problems[0].String(), "received:10: record seq 10 does not follow record seq 9 (received:9)") {
		t.Fatalf("tampered EventLists: ok=%v problems=%v", rep.OK(), rep.Problems)
	}
}

// endless yields `{"kind":"EventList","apiVersion":"audit.k8s.io/v1","items":[`
// and then string bytes for ever: a list that never ends.
type endless struct{ head []byte }

func (e *endless) Read(p []byte) (int, error) {
	if len(e.head) > 0 {
		n := copy(p, e.head)
		e.head = e.head[n:]
		return n, nil
	}
	for i := range p {
		p[i] = 'x'
	}
	return len(p), nil
}

// TestEventListIsBounded: a saved stream whose EventList never ends is
// reported as not valid once past MaxEventListBytes, instead of being
// read into memory for ever.
func TestEventListIsBounded(t *testing.T) {
	r := &endless{head: []byte(`{"kind":"EventList","apiVersion":"audit.k8s.io/v1","items":[{"kind":"Event","userAgent":"`)}
	var got []string
	err := scanAny(r, "stream", func(rec audit.Record) error {
		if rec.Err != nil {
			got = append(got, rec.Err.Error())
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || !strings.Contains(got[0], "EventList 1 is not valid JSON") || !strings.Contains(got[0], "longer than 268435456 bytes (MaxEventListBytes)") {
		t.Fatalf("findings %q, want EventList 1 reported as longer than MaxEventListBytes", got)
	}
}
