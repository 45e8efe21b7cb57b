package anchor_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/pipeguard/pipeguard/agent/audit"
	"github.com/pipeguard/pipeguard/agent/audit/anchor"
	"github.com/pipeguard/pipeguard/agent/audit/review"
)

const node = "win-node-1"

func request(i int) *audit.Event {
	t := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC).Add(time.Duration(i) * time.Millisecond)
	return &audit.Event{
		Kind: audit.Kind, APIVersion: audit.APIVersion, Level: audit.LevelMetadata, AuditID: fmt.Sprintf("id-%d", i),
		Stage: audit.StageResponseComplete, RequestURI: "/v1.Filesystem/Mkdir", Verb: "Mkdir",
		User:                     audit.UserInfo{Username: "pipeguard:peer:uid:0"},
		ObjectRef:                &audit.ObjectReference{Resource: "filesystem", APIVersion: "v1", Name: fmt.Sprintf(`C:\var\lib\kubelet\pods\%d`, i)},
		RequestReceivedTimestamp: audit.MicroTime{Time: t}, StageTimestamp: audit.MicroTime{Time: t},
		Annotations: map[string]string{audit.AnnotationRecord: audit.RecordRequest, audit.AnnotationDecision: audit.DecisionAllow},
	}
}

// anchoredLog writes a rotated log of 15 files whose agent publishes its
// anchor to the API server, and stops it, as the agent does at shutdown.
func anchoredLog(t *testing.T, c kubernetes.Interface) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "audit.log")
	clock := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	now := func() time.Time { clock = clock.Add(time.Millisecond); return clock }
	var pub *anchor.Publisher
	l, err := audit.Open(audit.Options{Path: path, MaxSize: 665 << 10, Log: logr.Discard(), Now: now, OnHead: func() { pub.Kick() }})
	if err != nil {
		t.Fatal(err)
	}
	pub, err = anchor.New(anchor.Options{Client: c, Node: node, Head: l.Head, Log: logr.Discard()})
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	pub.Start(ctx)
	for i := 0; i < 16140; i++ {
		if err := l.Append(request(i), i%100 == 0); err != nil {
			t.Fatal(err)
		}
	}
	pub.Stop()
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if err := pub.Publish(ctx); err != nil {
		t.Fatal(err)
	}
	return path
}

// logFiles is a log in memory: its files, oldest first, as lines.
type logFiles struct {
	paths []string
	lines [][][]byte
}

func load(t *testing.T, path string) *logFiles {
	t.Helper()
	files, err := audit.Files(path)
	if err != nil {
		t.Fatal(err)
	}
	lf := &logFiles{paths: files}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		lf.lines = append(lf.lines, bytes.SplitAfter(b, []byte("\n")))
		if n := len(lf.lines[len(lf.lines)-1]); n > 0 && len(lf.lines[len(lf.lines)-1][n-1]) == 0 {
			lf.lines[len(lf.lines)-1] = lf.lines[len(lf.lines)-1][:n-1]
		}
	}
	return lf
}

func (lf *logFiles) save(t *testing.T) {
	t.Helper()
	for i, p := range lf.paths {
		if lf.lines[i] == nil {
			if err := os.Remove(p); err != nil {
				t.Fatal(err)
			}
			continue
		}
		if err := os.WriteFile(p, bytes.Join(lf.lines[i], nil), 0o600); err != nil {
			t.Fatal(err)
		}
	}
}

func (lf *logFiles) newest() int { return len(lf.paths) - 1 }

// edit changes the URI of one record, keeping the rest of the line.
func edit(line []byte) []byte {
	return bytes.Replace(line, []byte(`"verb":"`), []byte(`"verb":"X`), 1)
}

// headOf returns the sequence number and hash of one record.
func headOf(t *testing.T, raw []byte) (uint64, audit.Hash) {
	t.Helper()
	var e audit.Event
	raw = bytes.TrimSuffix(raw, []byte("\n"))
	if err := json.Unmarshal(raw, &e); err != nil {
		t.Fatal(err)
	}
	p, err := audit.ParseHash(e.Annotations[audit.AnnotationPrevHash])
	if err != nil {
		t.Fatal(err)
	}
	seq, err := strconv.ParseUint(e.Annotations[audit.AnnotationSeq], 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	return seq, audit.Link(p, raw)
}

// head returns the sequence number and hash of the last record of the log.
func (lf *logFiles) head(t *testing.T) (uint64, audit.Hash) {
	t.Helper()
	for fi := len(lf.lines) - 1; fi >= 0; fi-- {
		if n := len(lf.lines[fi]); n > 0 {
			return headOf(t, lf.lines[fi][n-1])
		}
	}
	return 0, audit.Genesis()
}

// rechainFrom renumbers every record from file fi, line li on and
// recomputes every link after it, as an attacker with the files and the
// code would.
func (lf *logFiles) rechainFrom(t *testing.T, fi, li int) {
	t.Helper()
	var seq uint64
	prev := audit.Genesis()
	if li > 0 {
		seq, prev = headOf(t, lf.lines[fi][li-1])
	} else if fi > 0 {
		seq, prev = headOf(t, lf.lines[fi-1][len(lf.lines[fi-1])-1])
	}
	for ; fi < len(lf.lines); fi, li = fi+1, 0 {
		for ; li < len(lf.lines[fi]); li++ {
			var e map[string]any
			if err := json.Unmarshal(bytes.TrimSuffix(lf.lines[fi][li], []byte("\n")), &e); err != nil {
				t.Fatal(err)
			}
			seq++
			ann := e["annotations"].(map[string]any)
			ann[audit.AnnotationSeq] = strconv.FormatUint(seq, 10)
			ann[audit.AnnotationPrevHash] = prev.String()
			b, err := json.Marshal(e)
			if err != nil {
				t.Fatal(err)
			}
			prev = audit.Link(prev, b)
			lf.lines[fi][li] = append(b, '\n')
		}
	}
}

func itoa(n uint64) string { return strconv.FormatUint(n, 10) }

// appendForged appends a record that links correctly to the last one.
func (lf *logFiles) appendForged(t *testing.T, ann map[string]string) {
	t.Helper()
	seq, h := lf.head(t)
	ev := request(99999)
	ev.Verb = "checkpoint"
	for k, v := range ann {
		ev.Annotations[k] = v
	}
	ev.Annotations[audit.AnnotationSeq] = strconv.FormatUint(seq+1, 10)
	ev.Annotations[audit.AnnotationPrevHash] = h.String()
	b, err := json.Marshal(ev)
	if err != nil {
		t.Fatal(err)
	}
	n := lf.newest()
	lf.lines[n] = append(lf.lines[n], append(b, '\n'))
}

func copyLog(t *testing.T, path string) string {
	t.Helper()
	dst := t.TempDir()
	files, err := audit.Files(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dst, filepath.Base(f)), b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return filepath.Join(dst, filepath.Base(path))
}

func verifyAnchored(t *testing.T, path, kubeconfig string) *review.Report {
	t.Helper()
	a, err := review.ReadAnchorKubeconfig(context.Background(), kubeconfig, "", node)
	if err != nil {
		t.Fatal(err)
	}
	return verifyAgainst(t, path, a)
}

// verifyAgainst verifies the log at path against the anchor a, as
// pipeguard audit verify does.
func verifyAgainst(t *testing.T, path string, a *audit.Anchor) *review.Report {
	t.Helper()
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

func createNamespace(t *testing.T, c kubernetes.Interface) {
	t.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: anchor.DefaultNamespace}}
	if _, err := c.CoreV1().Namespaces().Create(context.Background(), ns, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}
