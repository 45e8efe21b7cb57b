package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"syscall"
	"testing"
	"time"

	fsv1 "github.com/kubernetes-csi/csi-proxy/client/api/filesystem/v1"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"

	"github.com/pipeguard/pipeguard/agent/audit"
	"github.com/pipeguard/pipeguard/agent/audit/review"
	"github.com/pipeguard/pipeguard/agent/guard"
	"github.com/pipeguard/pipeguard/agent/server"
	"github.com/pipeguard/pipeguard/internal/testing/badreceiver"
)

// TestStuckWebhookReceiverAndSIGTERM runs the agent binary as the attack
// on the audit webhook did: defaults, a receiver that accepts TCP and
// never answers, a buffer of 10 and batches of 1. 400 PathExists calls, 8
// at a time with a 3 s deadline each, are all answered; the log file keeps
// the record of every call answered OK and verifies; SIGTERM ends the
// process within the server's drain and the webhook's shutdown bound.
func TestStuckWebhookReceiverAndSIGTERM(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("unix sockets and SIGTERM")
	}
	receiver := badreceiver.Silent(t)

	dir := t.TempDir()
	kubeconfig := filepath.Join(dir, "receiver.kubeconfig")
	if err := os.WriteFile(kubeconfig, fmt.Appendf(nil, `apiVersion: v1
kind: Config
clusters: [{name: r, cluster: {server: "%s/audit"}}]
users: [{name: r, user: {}}]
contexts: [{name: r, context: {cluster: r, user: r}}]
current-context: r
`, receiver), 0o600); err != nil {
		t.Fatal(err)
	}
	sockets, kubelet, auditPath := filepath.Join(dir, "sockets"), filepath.Join(dir, "kubelet"), filepath.Join(dir, "audit", "audit.log")
	if err := os.MkdirAll(kubelet, 0o755); err != nil {
		t.Fatal(err)
	}
	cmd, exited, stderr := agentProcess(t, "--socket-dir", sockets, "--kubelet-path", kubelet, "--metrics-bind-address", "0",
		"--audit-log-path", auditPath, "--audit-webhook-config-file", kubeconfig,
		"--audit-webhook-batch-buffer-size", "10", "--audit-webhook-batch-max-size", "1")

	conn, err := grpc.NewClient("unix://"+server.SocketPath(sockets, "filesystem", "v1"), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	c := fsv1.NewFilesystemClient(conn)
	var (
		mu        sync.Mutex
		succeeded = map[string]string{}
		failures  []error
		wg        sync.WaitGroup
	)
	calls := make(chan int)
	for range 8 {
		wg.Go(func() {
			for range calls {
				// Ask for each call's audit ID (the audit-id response header).
				ctx, cancel := context.WithTimeout(metadata.AppendToOutgoingContext(context.Background(), guard.AuditIDRequestHeader, "1"), 3*time.Second)
				var md metadata.MD
				_, err := c.PathExists(ctx, &fsv1.PathExistsRequest{Path: kubelet}, grpc.Header(&md))
				cancel()
				mu.Lock()
				if ids := md.Get(guard.AuditIDHeader); err == nil && len(ids) == 1 {
					succeeded[ids[0]] = "PathExists"
				} else {
					failures = append(failures, err)
				}
				mu.Unlock()
			}
		})
	}
	for i := range 400 {
		calls <- i
	}
	close(calls)
	wg.Wait()
	if len(failures) > 0 {
		t.Fatalf("%d of 400 calls failed, the first: %v\n%s", len(failures), failures[0], stderr.String())
	}

	start := time.Now()
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	// Nothing is in flight, so the drain is immediate; what is left is the
	// webhook's bound and a few seconds for the rest.
	limit := audit.WebhookShutdownTimeout + 5*time.Second
	select {
	case err := <-exited:
		if err != nil {
			t.Fatalf("agent exit after SIGTERM: %v\n%s", err, stderr.String())
		}
		if d := time.Since(start); d > limit {
			t.Errorf("SIGTERM took %s to end the agent, more than %s", d, limit)
		}
	case <-time.After(limit + 30*time.Second):
		cmd.Process.Kill()
		t.Fatalf("the agent had not ended %s after SIGTERM\n%s", limit+30*time.Second, stderr.String())
	}
	files := checkRecords(t, auditPath, succeeded)
	rep, err := review.Verify(review.Source{Paths: files})
	if err != nil {
		t.Fatal(err)
	}
	if !rep.OK() {
		t.Fatalf("the log does not verify: %v", rep.Problems)
	}
}
