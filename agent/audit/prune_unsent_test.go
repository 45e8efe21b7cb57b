package audit

import (
	"fmt"
	"net/http/httptest"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/pipeguard/pipeguard/internal/testing/audittest"
	"github.com/pipeguard/pipeguard/internal/testing/badreceiver"
)

// inRanges reports whether seq is in a list such as "3-7,9".
func inRanges(t *testing.T, list string, seq uint64) bool {
	t.Helper()
	for _, part := range strings.Split(list, ",") {
		lo, hi, ok := strings.Cut(part, "-")
		if !ok {
			hi = lo
		}
		a, err1 := strconv.ParseUint(lo, 10, 64)
		b, err2 := strconv.ParseUint(hi, 10, 64)
		if err1 != nil || err2 != nil {
			t.Fatalf("unreadable range %q in %q", part, list)
		}
		if a <= seq && seq <= b {
			return true
		}
	}
	return false
}

// TestPruneKeepsUnsentFiles: with the receiver down, rotation with a
// MaxSize of 4 KiB and 2 backups keeps every file beyond the 2, all
// holding records the receiver never got, until they take more than
// MaxUnsentBytes; then the oldest is pruned all the same, with an error
// log, the metric, and a prune checkpoint listing its records as never
// delivered: Mkdir X's among them, so that "no file holds X and the
// receiver has nothing" is written in the log itself.
func TestPruneKeepsUnsentFiles(t *testing.T) {
	logs := &badreceiver.Log{}
	// Never started: the receiver is down for the whole test.
	wh := newWebhook(t, WebhookOptions{ConfigFile: audittest.WebhookKubeconfig(t, badreceiver.Refusing(t)), Log: logs.Logger()})
	path := filepath.Join(t.TempDir(), "audit.log")
	const maxBackups, limit = 2, 16 << 10
	l, err := Open(Options{Path: path, MaxSize: 4 << 10, MaxBackups: maxBackups, MaxUnsentBytes: limit, OnRecord: wh.Record, Unsent: wh, Log: logs.Logger()})
	if err != nil {
		t.Fatal(err)
	}
	x := request(0, DecisionAllow) // Mkdir X
	if err := l.Append(x, true); err != nil {
		t.Fatal(err)
	}
	most := 0
	var prunes []Record
	for i := 1; len(prunes) < 3; i++ {
		if i > 1000 {
			t.Fatalf("no prune after 1000 records; %d backups", len(backupsOf(t, path)))
		}
		if err := l.Append(request(i, DecisionAllow), false); err != nil {
			t.Fatal(err)
		}
		b := backupsOf(t, path)
		most = max(most, len(b))
		var held int64
		for _, f := range b[:max(0, len(b)-maxBackups)] {
			held += fileSize(t, f)
		}
		if held > limit {
			t.Fatalf("after record %d the %d files beyond the %d backups take %d bytes, more than the limit of %d", i, len(b)-maxBackups, maxBackups, held, limit)
		}
		_, prunes = seqsOf(t, path, "prune")
	}
	if most < maxBackups+3 {
		t.Fatalf("at most %d backups: the files holding unsent records were not kept beyond the %d", most, maxBackups)
	}
	first := prunes[0].Event.Annotations
	seqs, _ := seqsOf(t, path, "")
	if first[AnnotationPrunedUnsent] == "" || first[AnnotationPrunedUnsent] != first[AnnotationPrunedSeqs] {
		t.Fatalf("the first prune checkpoint: %v; want every record of the file (%s) listed in %s", first, first[AnnotationPrunedSeqs], AnnotationPrunedUnsent)
	}
	if _, inLog := seqs["id-0"]; inLog || !inRanges(t, first[AnnotationPrunedUnsent], 2) {
		t.Fatalf("Mkdir X (seq 2) is in a file: %v; or is not listed as never delivered: %q", inLog, first[AnnotationPrunedUnsent])
	}
	var pruned float64
	for _, p := range prunes {
		pr, err := ParsePrune(p)
		if err != nil {
			t.Fatal(err)
		}
		if p.Event.Annotation(AnnotationPrunedUnsent) == "" {
			t.Errorf("prune %s of records never delivered does not say so: %v", p.Where(), p.Event.Annotations)
		}
		pruned = float64(pr.Last) // cumulative: from 1
	}
	if got := testutil.ToFloat64(wh.prunedUnsent); got != pruned {
		t.Errorf("unsent pruned counted %v, want the %v records of the pruned files", got, pruned)
	}
	alerts := logs.With("removing a rotated audit file holding records never delivered to the webhook receiver: no copy of them is left; its prune checkpoint lists them")
	if len(alerts) != len(prunes) {
		t.Fatalf("%d alert lines for %d prunes: %v", len(alerts), len(prunes), logs.Lines())
	}
	wantErr := fmt.Sprintf("more than the %d of Options.MaxUnsentBytes", limit)
	if e, _ := alerts[0]["error"].(string); !strings.HasPrefix(e, "the rotated audit files kept for records not delivered off the node take ") || !strings.HasSuffix(e, wantErr) {
		t.Fatalf("alert error %q, want it to end %q", e, wantErr)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestPruneDeliveredFiles: once the receiver holds every record of a
// file, rotation prunes it at MaxBackups, as without a webhook.
func TestPruneDeliveredFiles(t *testing.T) {
	rc := &receiver{}
	srv := httptest.NewServer(rc)
	defer srv.Close()
	logs := &badreceiver.Log{}
	wh := newWebhook(t, WebhookOptions{ConfigFile: audittest.WebhookKubeconfig(t, srv.URL), BatchMaxSize: 1, Log: logs.Logger()})
	wh.Start()
	path := filepath.Join(t.TempDir(), "audit.log")
	const maxBackups = 2
	l, err := Open(Options{Path: path, MaxSize: 4 << 10, MaxBackups: maxBackups, MaxUnsentBytes: 1, OnRecord: wh.Record, Unsent: wh, Log: logs.Logger()})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 100 {
		if err := l.Append(request(i, DecisionAllow), false); err != nil {
			t.Fatal(err)
		}
		waitFor(t, "the receiver to take every record", func() bool { return testutil.ToFloat64(wh.sent) == float64(l.Seq()) })
		if b := backupsOf(t, path); len(b) > maxBackups {
			t.Fatalf("after record %d, %d backups of records all delivered, want at most %d", i, len(b), maxBackups)
		}
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	stopWithin(t, wh, 5*time.Second)
	_, prunes := seqsOf(t, path, "prune")
	if len(prunes) == 0 {
		t.Fatal("no prune in 100 records of 4 KiB files")
	}
	for _, p := range prunes {
		if u := p.Event.Annotation(AnnotationPrunedUnsent); u != "" {
			t.Errorf("prune %s lists records never delivered: %q", p.Where(), u)
		}
	}
	if got := testutil.ToFloat64(wh.prunedUnsent); got != 0 {
		t.Errorf("unsent pruned %v, want 0", got)
	}
}
