package review

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/kubernetes/fake"

	"github.com/pipeguard/pipeguard/agent/audit"
)

// TestFindingsNameTheAgentsOptions checks that a finding about pruned
// files names audit.Options.MaxBackups as the library's callers set it,
// and the name a command gives that option when it shows the finding.
func TestFindingsNameTheAgentsOptions(t *testing.T) {
	flags := func(key string) (string, bool) {
		if key == audit.OptionMaxBackups {
			return "--audit-log-maxbackup", true
		}
		return "", false
	}
	path := filepath.Join(t.TempDir(), "audit.log")
	clock := time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)
	l := openLog(t, audit.Options{Path: path, MaxSize: 2048, MaxBackups: 2, Now: func() time.Time { clock = clock.Add(time.Second); return clock }})
	write(t, l, 0, 60)
	l.Close()

	rep := verify(t, path)
	var pruned Finding
	for _, n := range rep.Notices {
		if strings.Contains(n.Msg, "prune checkpoints match") {
			pruned = n
		}
	}
	if !strings.HasSuffix(pruned.Msg, " were in files the agent removed under Options.MaxBackups; their prune checkpoints match") {
		t.Fatalf("notices %v", rep.Notices)
	}
	if got := pruned.Named(flags).Msg; got != strings.Replace(pruned.Msg, "Options.MaxBackups", "--audit-log-maxbackup", 1) {
		t.Fatalf("named: %q", got)
	}
	if got := pruned.Named(nil); got != pruned {
		t.Fatalf("named without a namer: %+v", got)
	}

	backups := mustFiles(t, path)
	if err := os.Remove(backups[0]); err != nil {
		t.Fatal(err)
	}
	rep = verify(t, path)
	want := "so earlier files were deleted by something other than the agent's Options.MaxBackups"
	if rep.OK() || !strings.HasSuffix(rep.Problems[0].Msg, want) ||
		!strings.HasSuffix(rep.Problems[0].Named(flags).Msg, "something other than the agent's --audit-log-maxbackup") {
		t.Fatalf("after deleting the oldest file: %v", rep.Problems)
	}
	if n := (Finding{Where: "x", Msg: "holds Options.MaxBackups"}).Named(flags); n.Msg != "holds Options.MaxBackups" {
		t.Fatalf("a finding naming no option was renamed: %q", n.Msg)
	}
}

// TestEventListTooLongNamesTheBatchOption: the finding of an EventList
// longer than review holds names the agent's WebhookOptions.BatchMaxBytes,
// and the flag that sets it when a command names it.
func TestEventListTooLongNamesTheBatchOption(t *testing.T) {
	flags := func(key string) (string, bool) {
		f, ok := map[string]string{audit.OptionWebhookBatchMaxBytes: "--audit-webhook-batch-max-bytes"}[key]
		return f, ok
	}
	r := &endless{head: []byte(`{"kind":"EventList","apiVersion":"audit.k8s.io/v1","items":[{"kind":"Event","userAgent":"`)}
	rep, err := Verify(Source{Reader: r, Name: "stream"})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Problems) == 0 {
		t.Fatalf("no problem reported: %+v", rep)
	}
	p := rep.Problems[0]
	if want := "the agent sends lists of at most WebhookOptions.BatchMaxBytes"; !strings.Contains(p.Msg, want) {
		t.Errorf("finding %q, want it to name %q", p.Msg, want)
	}
	if want := "the agent sends lists of at most --audit-webhook-batch-max-bytes"; !strings.Contains(p.Named(flags).Msg, want) {
		t.Errorf("named finding %q, want it to name %q", p.Named(flags).Msg, want)
	}
}

// TestReadAnchorNamesTheAgentsOptions: a node without an anchor names the
// options that make its agent publish one, by their Go names.
func TestReadAnchorNamesTheAgentsOptions(t *testing.T) {
	_, err := ReadAnchor(context.Background(), fake.NewClientset(), "", "node-a")
	want := `no audit anchor for node "node-a": Lease pipeguard-agent/pipeguard-audit-node-a does not exist; the agent on that node publishes it when it runs with anchor.Options.Client and anchor.Options.Node`
	if err == nil || err.Error() != want {
		t.Fatalf("err = %v\nwant  %q", err, want)
	}
}

// TestUnsentPruneNamesTheAgentsOption: records removed before the
// receiver acknowledged them are a notice naming the agent's
// Options.MaxUnsentBytes, and the flag that sets it when a command names
// it.
func TestUnsentPruneNamesTheAgentsOption(t *testing.T) {
	flags := func(key string) (string, bool) {
		f, ok := map[string]string{audit.OptionMaxUnsentBytes: "--audit-webhook-unsent-max-bytes"}[key]
		return f, ok
	}
	path := filepath.Join(t.TempDir(), "audit.log")
	l := openLog(t, audit.Options{Path: path})
	ev := request(0, audit.DecisionAllow)
	ev.Annotations[audit.AnnotationPrunedUnsent] = "3-9"
	if err := l.Append(ev, true); err != nil {
		t.Fatal(err)
	}
	l.Close()
	const lib = "records 3-9 were removed from the node before the audit webhook receiver acknowledged them: no copy of them is kept anywhere (raise Options.MaxUnsentBytes, or fix the receiver)"
	const cmd = "records 3-9 were removed from the node before the audit webhook receiver acknowledged them: no copy of them is kept anywhere (raise --audit-webhook-unsent-max-bytes, or fix the receiver)"
	var found bool
	for _, n := range verify(t, path).Notices {
		if n.Msg == lib {
			found = true
			if got := n.Named(flags).Msg; got != cmd {
				t.Errorf("named notice %q, want %q", got, cmd)
			}
		}
	}
	if !found {
		t.Fatalf("no notice %q", lib)
	}
}
