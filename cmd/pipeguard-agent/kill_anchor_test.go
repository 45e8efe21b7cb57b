package main

import (
	"context"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/pipeguard/pipeguard/agent/audit"
	"github.com/pipeguard/pipeguard/agent/audit/anchor"
	"github.com/pipeguard/pipeguard/agent/audit/review"
	"github.com/pipeguard/pipeguard/internal/testing/testenv"
)

// TestKill9UnderLoadAnchored kills an agent that anchors its chain in a
// real kube-apiserver with SIGKILL under concurrent load, restarts it and
// stops it: every call a client saw succeed has its records, and the log
// verifies against the anchor each time.
func TestKill9UnderLoadAnchored(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("unix sockets and SIGKILL")
	}
	env := testenv.Start(t, testenv.Options{})
	c := kubernetes.NewForConfigOrDie(env.Config)
	ctx := context.Background()
	if _, err := c.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: anchor.DefaultNamespace}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	kubeconfig := env.KubeconfigFile(t)
	const node = "win-node-1"
	sockets, kubelet, auditPath := filepath.Join(dir, "sockets"), filepath.Join(dir, "kubelet"), filepath.Join(dir, "audit", "audit.log")
	os.MkdirAll(kubelet, 0o755)
	args := []string{"--socket-dir", sockets, "--kubelet-path", kubelet, "--metrics-bind-address", "0",
		"--audit-log-path", auditPath, "--audit-log-maxsize", "1",
		"--kubeconfig", kubeconfig, "--node-name", node, "--audit-anchor-interval", "50ms"}
	cmd, exited, stderr := agentProcess(t, args...)

	succeeded, _ := killUnderLoad(t, cmd, exited, sockets, kubelet)
	checkRecords(t, auditPath, succeeded)
	rep := verifyAnchored(t, kubeconfig, node, auditPath)
	if !rep.OK() {
		t.Fatalf("anchored verify after kill -9: %v\n%s", rep.Problems, stderr.String())
	}
	t.Logf("kill -9 after %d successful calls (%d files, %d records, anchored at seq %d); notices: %v",
		len(succeeded), len(rep.Files), rep.Records, rep.Anchor.Seq, rep.Notices)

	// The restarted agent continues the chain and, once stopped, anchors
	// its stop checkpoint: the chain then ends exactly at the anchor.
	cmd, exited, stderr = agentProcess(t, args...)
	cmd.Process.Signal(syscall.SIGTERM)
	if err := <-exited; err != nil {
		t.Fatalf("restarted agent: %v\n%s", err, stderr.String())
	}
	rep = verifyAnchored(t, kubeconfig, node, auditPath)
	if !rep.OK() {
		t.Fatalf("anchored verify after restart: %v", rep.Problems)
	}
	if last := rep.Notices[len(rep.Notices)-1].Msg; rep.Anchor.Seq != rep.Last || !strings.Contains(last, "the chain reaches the anchor") {
		t.Fatalf("after a clean stop the anchor is at seq %d, the chain ends at %d; last notice %q", rep.Anchor.Seq, rep.Last, last)
	}
}

func verifyAnchored(t *testing.T, kubeconfig, node, path string) *review.Report {
	t.Helper()
	a, err := review.ReadAnchorKubeconfig(context.Background(), kubeconfig, "", node)
	if err != nil {
		t.Fatal(err)
	}
	files, err := audit.Files(path)
	if err != nil {
		t.Fatal(err)
	}
	rep, err := review.VerifyWith(review.Source{Paths: files}, review.VerifyOptions{Anchor: a})
	if err != nil {
		t.Fatal(err)
	}
	return rep
}
