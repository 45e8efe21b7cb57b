package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/pipeguard/pipeguard/agent/audit"
	"github.com/pipeguard/pipeguard/agent/audit/anchor"
	"github.com/pipeguard/pipeguard/internal/testing/testenv"
)

// TestAuditVerifyAgainstTheClusterAnchor runs `pipeguard audit verify PATH
// --kubeconfig FILE --node NODE` against a real API server holding the
// node's anchor: the intact log passes; the same log with its newest
// records cut off, which verifies without the anchor, fails naming what
// is missing; a node without an anchor is an error, not a pass.
func TestAuditVerifyAgainstTheClusterAnchor(t *testing.T) {
	env := testenv.Start(t, testenv.Options{})
	ctx := context.Background()
	dir := t.TempDir()
	kubeconfig := env.KubeconfigFile(t)
	if err := env.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: anchor.DefaultNamespace}}); err != nil {
		t.Fatal(err)
	}

	path := filepath.Join(dir, "log", "audit.log")
	l, err := audit.Open(audit.Options{Path: path, Log: logr.Discard()})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 20 {
		ev := audit.Event{Kind: "Event", APIVersion: audit.APIVersion, Level: audit.LevelMetadata, AuditID: "id-" + strings.Repeat("x", i+1),
			Stage: audit.StageResponseComplete, RequestURI: "/v1.Filesystem/PathExists", Verb: "call",
			Annotations: map[string]string{audit.AnnotationDecision: "allow"}}
		if err := l.Append(&ev, true); err != nil {
			t.Fatal(err)
		}
	}
	head, err := l.Head()
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	a := audit.Anchor{Node: "node-a", Head: head, Time: now, AgentStart: now}
	lease := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Namespace: anchor.DefaultNamespace, Name: audit.AnchorLeaseName("node-a"), Annotations: a.Annotations()}}
	if err := env.Client.Create(ctx, lease); err != nil {
		t.Fatal(err)
	}

	run := func(args ...string) (string, int) {
		var out, errb bytes.Buffer
		code := run(append([]string{"audit", "verify"}, args...), strings.NewReader(""), &out, &errb)
		return out.String() + errb.String(), code
	}
	out, code := run(path, "--kubeconfig", kubeconfig, "--node", "node-a")
	if code != exitOK || !strings.Contains(out, "OK: the anchor of node node-a is in the chain") {
		t.Fatalf("intact log: exit %d\n%s", code, out)
	}

	// Cut the last five records: the chain alone still verifies.
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	lines := bytes.SplitAfter(data, []byte("\n"))
	cut := filepath.Join(dir, "cut", "audit.log")
	if err := os.MkdirAll(filepath.Dir(cut), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(cut, bytes.Join(lines[:len(lines)-6], nil), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, code := run(cut); code != exitOK || !strings.Contains(out, "without an anchor") {
		t.Fatalf("the cut log without an anchor: exit %d, want 0 with the no-anchor notice\n%s", code, out)
	}
	out, code = run(cut, "--kubeconfig", kubeconfig, "--node", "node-a")
	if code != exitDenied || !strings.Contains(out, "missing from the end of the log") {
		t.Fatalf("the cut log with the anchor: exit %d, want %d naming the missing records\n%s", code, exitDenied, out)
	}

	if out, code := run(path, "--kubeconfig", kubeconfig, "--node", "node-b"); code != exitBadInput || !strings.Contains(out, `no audit anchor for node "node-b"`) {
		t.Fatalf("a node without an anchor: exit %d, want %d\n%s", code, exitBadInput, out)
	}
	if out, code := run(path, "--node", "node-a"); code != exitBadInput || !strings.Contains(out, "give --kubeconfig and --node together") {
		t.Fatalf("--node alone: exit %d\n%s", code, out)
	}
}
