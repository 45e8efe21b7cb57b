package app

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	fsv1 "github.com/kubernetes-csi/csi-proxy/client/api/filesystem/v1"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"

	"github.com/pipeguard/pipeguard/agent/audit"
	"github.com/pipeguard/pipeguard/agent/guard"
	"github.com/pipeguard/pipeguard/agent/server"
)

// sizeLimitedReceiver answers 413 to every body over limit bytes, and
// keeps the audit IDs of the records of the others.
type sizeLimitedReceiver struct {
	limit int64
	mu    sync.Mutex
	ids   map[string]bool
}

func (rc *sizeLimitedReceiver) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	if int64(len(body)) > rc.limit {
		http.Error(w, fmt.Sprintf("body of %d bytes over the limit of %d", len(body), rc.limit), http.StatusRequestEntityTooLarge)
		return
	}
	var list struct{ Items []audit.Event }
	if err := json.NewDecoder(bytes.NewReader(body)).Decode(&list); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	rc.mu.Lock()
	defer rc.mu.Unlock()
	for _, e := range list.Items {
		rc.ids[e.AuditID] = true
	}
}

func (rc *sizeLimitedReceiver) has(id string) bool {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return rc.ids[id]
}

// TestWebhookPoisonedCallsLoseOnlyTheirRecords: the agent with a
// receiver that takes bodies up to 4 KiB. Mkdir X, then three Mkdir calls
// whose 12 KiB user agent (within the header bound; cut to 4 KiB in the
// record) makes their records too large for it: X's
// records reach the receiver, and each poisoned record is reported on its
// own, in the agent's log and by a webhook-rejected checkpoint in the
// audit log naming its seq, which reaches the receiver too.
func TestWebhookPoisonedCallsLoseOnlyTheirRecords(t *testing.T) {
	rc := &sizeLimitedReceiver{limit: 4 << 10, ids: map[string]bool{}}
	srv := httptest.NewServer(rc)
	defer srv.Close()
	a := runWebhookAgent(t, srv.URL+"/audit", false)
	mkdir := func(ua string, name string) string {
		t.Helper()
		opts := []grpc.DialOption{grpc.WithTransportCredentials(insecure.NewCredentials())}
		if ua != "" {
			opts = append(opts, grpc.WithUserAgent(ua))
		}
		conn, err := grpc.NewClient("unix://"+server.SocketPath(a.socketDir, "filesystem", "v1"), opts...)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
		defer cancel()
		var md metadata.MD
		if _, err := fsv1.NewFilesystemClient(conn).Mkdir(ctx, &fsv1.MkdirRequest{Path: filepath.Join(a.kubelet, name)}, grpc.Header(&md), askAuditID); err != nil {
			t.Fatalf("Mkdir %s: %v", name, err)
		}
		ids := md.Get(guard.AuditIDHeader)
		if len(ids) != 1 {
			t.Fatalf("Mkdir %s: audit IDs %v", name, ids)
		}
		return ids[0]
	}
	x := mkdir("", "x")
	var poisoned []string
	for i := range 3 {
		poisoned = append(poisoned, mkdir(strings.Repeat("p", 12<<10), fmt.Sprint("p", i)))
	}
	// Each poisoned call has two records: its write-ahead and its completion.
	for deadline := time.Now().Add(time.Minute); a.counter(t, "pipeguard_agent_audit_webhook_rejected_total") < 6; time.Sleep(10 * time.Millisecond) { // a poll under a deadline; the pause only spares the CPU
		if time.Now().After(deadline) {
			t.Fatalf("%v records rejected a minute after the calls, want 6; log: %v", a.counter(t, "pipeguard_agent_audit_webhook_rejected_total"), a.log.Lines())
		}
	}
	a.stop(t)

	recs := a.records(t)
	if !rc.has(x) || len(recs[x]) != 2 {
		t.Fatalf("Mkdir X: at the receiver %v, %d records in the log; want both there", rc.has(x), len(recs[x]))
	}
	want := map[uint64]bool{}
	for _, id := range poisoned {
		if rc.has(id) {
			t.Errorf("poisoned call %s reached a receiver that takes 8 KiB", id)
		}
		for _, r := range recs[id] {
			want[r.Seq] = true
		}
	}
	lines := a.log.With("audit record refused by the webhook receiver on its own: it is not sent, the other records of its batch are; the log file keeps it and a webhook-rejected checkpoint names it")
	if len(lines) != 6 {
		t.Fatalf("%d rejection lines, want 6", len(lines))
	}
	for _, ln := range lines {
		if !want[uint64(ln["seq"].(float64))] {
			t.Errorf("rejection line %v names no poisoned record (%v)", ln, want)
		}
	}
	files, err := audit.Files(a.auditPath)
	if err != nil {
		t.Fatal(err)
	}
	named := map[uint64]bool{}
	for _, f := range files {
		if err := audit.ScanFile(f, func(r audit.Record) error {
			if r.Err == nil && r.Event.Annotation(audit.AnnotationCheckpoint) == "webhook-rejected" {
				seq, _ := strconv.ParseUint(r.Event.Annotation(audit.AnnotationWebhookRejectedSeq), 10, 64)
				named[seq] = true
				if !rc.has(r.Event.AuditID) {
					t.Errorf("checkpoint %s did not reach the receiver", r.Where())
				}
			}
			return r.Err
		}); err != nil {
			t.Fatal(err)
		}
	}
	if fmt.Sprint(named) != fmt.Sprint(want) {
		t.Fatalf("webhook-rejected checkpoints name %v, want the poisoned records %v", named, want)
	}
	rep := verifyLog(t, a.auditPath)
	if !rep.OK() {
		t.Fatalf("audit verify: %v", rep.Problems)
	}
	refusedNotices := 0
	for _, n := range rep.Notices {
		if strings.Contains(n.Msg, "the audit webhook receiver refused record seq") && strings.Contains(n.Msg, "only the files on the node hold it") {
			refusedNotices++
		}
	}
	if refusedNotices != 6 {
		t.Fatalf("verify noticed %d records the receiver refused, want 6: %v", refusedNotices, rep.Notices)
	}
}
