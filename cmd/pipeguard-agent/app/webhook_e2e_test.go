package app

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	fsv1 "github.com/kubernetes-csi/csi-proxy/client/api/filesystem/v1"
	"github.com/prometheus/client_golang/prometheus"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/pipeguard/pipeguard/agent/audit"
	"github.com/pipeguard/pipeguard/agent/guard"
	"github.com/pipeguard/pipeguard/agent/server"
	"github.com/pipeguard/pipeguard/internal/testing/badreceiver"
)

// webhookAgent is an agent assembled by Run, as the command line runs
// it, whose audit webhook sends to a receiver.
type webhookAgent struct {
	socketDir, kubelet, auditPath string
	reg                           *prometheus.Registry
	log                           *badreceiver.Log
	cancel                        context.CancelFunc
	done                          chan error
}

// runWebhookAgent runs an agent with the agent defaults and
// --audit-webhook-config-file naming url, --audit-webhook-batch-buffer-size
// 10 and --audit-webhook-batch-max-size 1, plus blocking mode when block.
func runWebhookAgent(t *testing.T, url string, block bool) *webhookAgent {
	t.Helper()
	base := t.TempDir()
	// Unix socket paths are short; test temp dirs can be long.
	sockets, err := os.MkdirTemp("", "pgwh")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(sockets) })
	a := &webhookAgent{socketDir: sockets, kubelet: filepath.Join(base, "kubelet"), auditPath: filepath.Join(base, "audit", "audit.log"),
		reg: prometheus.NewRegistry(), log: &badreceiver.Log{}, done: make(chan error, 1)}
	if err := os.MkdirAll(a.kubelet, 0o755); err != nil {
		t.Fatal(err)
	}
	kubeconfig := filepath.Join(base, "webhook.kubeconfig")
	if err := os.WriteFile(kubeconfig, fmt.Appendf(nil, `apiVersion: v1
kind: Config
clusters: [{name: receiver, cluster: {server: %q}}]
users: [{name: agent, user: {}}]
contexts: [{name: audit, context: {cluster: receiver, user: agent}}]
current-context: audit
`, url), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg := Config{
		Agent: Options{Log: a.log.Logger(), KubeletPath: a.kubelet, SocketDir: sockets, Registry: a.reg},
		Guard: GuardConfig{
			Audit: audit.Options{Path: a.auditPath, MaxSize: 100 << 20}, AuditLevel: audit.LevelMetadata, AuditFailure: guard.FailDeny,
			// A request to a receiver that never answers lasts the whole
			// test: were it to time out, its records would leave the
			// buffer (failed), their caller's share would free, and the
			// records of the failure would fill it, so the refusals a
			// slow run sees would name the buffer, not the share.
			AuditWebhook: audit.WebhookOptions{ConfigFile: kubeconfig, BatchMaxSize: 1, BatchMaxWait: audit.DefaultWebhookBatchMaxWait,
				BufferSize: 10, InitialBackoff: audit.DefaultWebhookInitialBackoff, Block: block, RequestTimeout: 5 * time.Minute},
		},
	}
	ctx, cancel := context.WithCancel(context.Background())
	a.cancel = cancel
	ready := make(chan struct{})
	go func() { a.done <- Run(ctx, cfg, func([]string) { close(ready) }) }()
	select {
	case <-ready:
	case err := <-a.done:
		t.Fatalf("Run: %v", err)
	case <-time.After(time.Minute):
		t.Fatal("the agent was not listening a minute after Run")
	}
	t.Cleanup(func() {
		if a.cancel != nil {
			a.cancel()
			<-a.done
		}
	})
	return a
}

// stop shuts the agent down as SIGTERM does and fails unless Run returns,
// without error, within the webhook's shutdown bound and a few seconds
// for the rest.
func (a *webhookAgent) stop(t *testing.T) {
	t.Helper()
	limit := audit.WebhookShutdownTimeout + 5*time.Second
	start := time.Now()
	a.cancel()
	a.cancel = nil
	select {
	case err := <-a.done:
		if err != nil {
			t.Errorf("Run: %v", err)
		}
		if d := time.Since(start); d > limit {
			t.Errorf("the agent took %s to stop, more than %s", d, limit)
		}
	case <-time.After(limit + 30*time.Second):
		t.Fatalf("the agent had not stopped %s after it was told to", limit+30*time.Second)
	}
}

// answer is how one call ended.
type answer struct {
	auditID string
	err     error
}

// pathExists makes 400 PathExists calls, 8 at a time, each with a 3s
// deadline. A call that misses its deadline fails the test, and its
// goroutine makes no more calls.
func (a *webhookAgent) pathExists(t *testing.T) []answer {
	t.Helper()
	conn, err := grpc.NewClient("unix://"+server.SocketPath(a.socketDir, "filesystem", "v1"), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	c := fsv1.NewFilesystemClient(conn)
	const workers, each = 8, 50
	answers := make([]answer, workers*each)
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for i := range each {
				ctx, cancel := context.WithTimeout(t.Context(), 3*time.Second)
				var md metadata.MD
				_, err := c.PathExists(ctx, &fsv1.PathExistsRequest{Path: a.kubelet}, grpc.Header(&md), askAuditID)
				cancel()
				ans := &answers[w*each+i]
				ans.err = err
				if ids := md.Get(guard.AuditIDHeader); len(ids) == 1 {
					ans.auditID = ids[0]
				}
				if status.Code(err) == codes.DeadlineExceeded {
					t.Errorf("call %d got no answer within its 3s deadline", w*each+i)
					return
				}
			}
		})
	}
	wg.Wait()
	return answers
}

// records reads the agent's audit log: the request records by audit ID.
func (a *webhookAgent) records(t *testing.T) map[string][]audit.Record {
	t.Helper()
	files, err := audit.Files(a.auditPath)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string][]audit.Record{}
	for _, f := range files {
		fh, err := os.Open(f)
		if err != nil {
			t.Fatal(err)
		}
		err = audit.Scan(fh, f, func(r audit.Record) error {
			if r.Err == nil && !r.Event.IsCheckpoint() {
				out[r.Event.AuditID] = append(out[r.Event.AuditID], r)
			}
			return r.Err
		})
		fh.Close()
		if err != nil {
			t.Fatal(err)
		}
	}
	return out
}

func (a *webhookAgent) counter(t *testing.T, name string) float64 {
	t.Helper()
	return family(t, a.reg, name)[0].GetCounter().GetValue()
}

// TestWebhookReceiverCannotHoldTheAgent: whatever the webhook receiver
// does, every call is answered and the agent stops within the webhook's
// shutdown bound. By default every call is served, has its record in the
// log file, and the records the webhook cannot hold are counted and
// logged; in blocking mode, the calls whose records it cannot take are
// refused at once with a message naming the receiver, and the log file
// holds each as a deny.
func TestWebhookReceiverCannotHoldTheAgent(t *testing.T) {
	for name, receiver := range badreceiver.All {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			url := receiver(t) + "/audit"
			t.Run("dropping", func(t *testing.T) {
				t.Parallel()
				webhookDrops(t, url)
			})
			t.Run("blocking", func(t *testing.T) {
				t.Parallel()
				webhookRefuses(t, url)
			})
		})
	}
}

func webhookDrops(t *testing.T, url string) {
	a := runWebhookAgent(t, url, false)
	answers := a.pathExists(t)
	a.stop(t)

	recs := a.records(t)
	for i, ans := range answers {
		if ans.err != nil {
			t.Fatalf("call %d: %v; want every call answered OK", i, ans.err)
		}
		rs := recs[ans.auditID]
		if len(rs) != 1 || rs[0].Event.Annotation(audit.AnnotationDecision) != audit.DecisionAllow || rs[0].Event.Annotation(audit.AnnotationGRPCCode) != "OK" {
			t.Fatalf("call %d (audit ID %q) answered OK has records %+v in the log file, want its one allow record", i, ans.auditID, rs)
		}
	}
	rep := verifyLog(t, a.auditPath)
	if !rep.OK() {
		t.Fatalf("audit verify: %v", rep.Problems)
	}

	sent := a.counter(t, "pipeguard_agent_audit_webhook_sent_total")
	overflow := a.counter(t, "pipeguard_agent_audit_webhook_overflow_total")
	failed := a.counter(t, "pipeguard_agent_audit_webhook_failed_total")
	if sent != 0 || overflow < 380 || sent+overflow+failed != float64(rep.Records) {
		t.Fatalf("webhook sent %v, overflow %v, failed %v; want none sent, most dropped, and each of the %d records in the log counted once", sent, overflow, failed, rep.Records)
	}
	drops := a.log.With("audit records dropped from the webhook; the log file keeps them")
	want := "audit webhook " + url + ": buffer of 10 records full; the receiver is not keeping up"
	if len(drops) == 0 || len(drops) > 2 || drops[0]["error"] != want {
		t.Fatalf("overflow log lines %v; want one or two (rate-limited), saying %q", drops, want)
	}
}

// shareFull is the refusal of a call from this test, the one caller, in
// blocking mode once its share of a buffer of 10 records is full.
func shareFull(url string) string {
	return fmt.Sprintf("audit webhook %s: the share of caller uid:%d (1/%d of the buffer: %d records or %d bytes) is full, and in blocking mode its requests are refused until the receiver takes its records; other callers go on",
		url, os.Getuid(), audit.WebhookCallerShare, 10/audit.WebhookCallerShare, audit.DefaultWebhookBufferBytes/audit.WebhookCallerShare)
}

func webhookRefuses(t *testing.T, url string) {
	a := runWebhookAgent(t, url, true)
	answers := a.pathExists(t)
	a.stop(t)

	recs := a.records(t)
	// The test is the one caller: its share of the buffer is what fills.
	want := shareFull(url)
	var ok, refused int
	for i, ans := range answers {
		rs := recs[ans.auditID]
		if len(rs) != 1 {
			t.Fatalf("call %d (audit ID %q, %v) has %d records in the log file, want 1", i, ans.auditID, ans.err, len(rs))
		}
		e := rs[0].Event
		if ans.err == nil {
			ok++
			if e.Annotation(audit.AnnotationDecision) != audit.DecisionAllow {
				t.Fatalf("call %d answered OK is recorded as %v", i, e.Annotations)
			}
			continue
		}
		refused++
		wantStatus(t, ans.err, codes.Unavailable, "the request was not run: "+want+" (rule "+guard.RuleAudit+")")
		if strings.Contains(ans.err.Error(), "free space") {
			t.Fatalf("call %d: %v blames the disk for the receiver", i, ans.err)
		}
		if e.Annotation(audit.AnnotationDecision) != audit.DecisionDeny || e.Annotation(audit.AnnotationRule) != guard.RuleAudit ||
			e.Annotation(audit.AnnotationReason) != want || e.Annotation(audit.AnnotationGRPCCode) != codes.Unavailable.String() {
			t.Fatalf("call %d refused is recorded with annotations %v, want a deny by rule %s saying %q", i, e.Annotations, guard.RuleAudit, want)
		}
	}
	if ok == 0 || refused < 380 {
		t.Fatalf("%d calls answered OK, %d refused: want the first few OK (the buffer holds 10), the rest refused", ok, refused)
	}
	if rep := verifyLog(t, a.auditPath); !rep.OK() {
		t.Fatalf("audit verify: %v", rep.Problems)
	}
}

// TestWebhookBlockingNeedsAuditFailureDeny: under --audit-failure=allow
// the guard would run a refused request without a record.
func TestWebhookBlockingNeedsAuditFailureDeny(t *testing.T) {
	base := t.TempDir()
	kubeconfig := filepath.Join(base, "webhook.kubeconfig")
	os.WriteFile(kubeconfig, []byte("apiVersion: v1\nkind: Config\nclusters: [{name: r, cluster: {server: \"http://127.0.0.1:1\"}}]\nusers: [{name: a, user: {}}]\ncontexts: [{name: c, context: {cluster: r, user: a}}]\ncurrent-context: c\n"), 0o600)
	err := Run(t.Context(), Config{
		Agent: Options{Log: logr.Discard(), KubeletPath: base, SocketDir: filepath.Join(base, "s")},
		Guard: GuardConfig{Audit: audit.Options{Path: filepath.Join(base, "audit.log")}, AuditFailure: guard.FailAllow,
			AuditWebhook: audit.WebhookOptions{ConfigFile: kubeconfig, Block: true}},
	}, nil)
	var oe *OptionError
	if !errors.As(err, &oe) || oe.Option != "Guard.AuditWebhook.Block" || !strings.Contains(err.Error(), "the webhook's blocking mode refuses requests, which needs Guard.AuditFailure deny") {
		t.Fatalf("Run = %v, want an OptionError for Guard.AuditWebhook.Block", err)
	}
}

// TestWebhookBlockingRefusesBeforeTheHostOperation: in blocking mode a
// call that changes the host is refused at its write-ahead record, before
// the operation runs; the completion of an operation that ran is never
// refused, even with the buffer full.
func TestWebhookBlockingRefusesBeforeTheHostOperation(t *testing.T) {
	url := badreceiver.Refusing(t) + "/audit"
	a := runWebhookAgent(t, url, true)
	conn, err := grpc.NewClient("unix://"+server.SocketPath(a.socketDir, "filesystem", "v1"), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	c := fsv1.NewFilesystemClient(conn)
	const n = 40
	answers := make([]answer, n)
	var wg sync.WaitGroup
	for w := range 8 {
		wg.Go(func() {
			for i := w; i < n; i += 8 {
				ctx, cancel := context.WithTimeout(t.Context(), 3*time.Second)
				var md metadata.MD
				_, answers[i].err = c.Mkdir(ctx, &fsv1.MkdirRequest{Path: filepath.Join(a.kubelet, fmt.Sprint(i))}, grpc.Header(&md), askAuditID)
				cancel()
				if ids := md.Get(guard.AuditIDHeader); len(ids) == 1 {
					answers[i].auditID = ids[0]
				}
			}
		})
	}
	wg.Wait()
	a.stop(t)

	recs := a.records(t)
	var ok int
	for i, ans := range answers {
		var stages []string
		for _, r := range recs[ans.auditID] {
			stages = append(stages, string(r.Event.Stage)+" "+r.Event.Annotation(audit.AnnotationDecision))
		}
		_, statErr := os.Stat(filepath.Join(a.kubelet, fmt.Sprint(i)))
		switch {
		case ans.err == nil:
			ok++
			if statErr != nil || fmt.Sprint(stages) != "[RequestReceived allow ResponseComplete allow]" {
				t.Errorf("Mkdir %d answered OK: directory %v, records %v; want it made, with its write-ahead and completion", i, statErr, stages)
			}
		default:
			wantStatus(t, ans.err, codes.Unavailable, shareFull(url))
			if statErr == nil || fmt.Sprint(stages) != "[ResponseComplete deny]" {
				t.Errorf("Mkdir %d refused: directory made %v, records %v; want it not made, with one deny record", i, statErr == nil, stages)
			}
		}
	}
	if ok == 0 || ok == n {
		t.Fatalf("%d of %d Mkdir calls answered OK: want the buffer to take some write-ahead records and refuse the rest", ok, n)
	}
	if rep := verifyLog(t, a.auditPath); !rep.OK() {
		t.Fatalf("audit verify: %v", rep.Problems)
	}
}
