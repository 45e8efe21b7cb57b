package review

import (
	"context"
	"errors"
	"maps"
	"strings"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/pipeguard/pipeguard/agent/audit"
)

// TestReadReportsAReset reads anchors in each state a reset leaves them in.
func TestReadAnchorReportsAReset(t *testing.T) {
	anchored := anchorAt("node-x", 20).Annotations()
	with := func(extra map[string]string) map[string]string {
		ann := maps.Clone(anchored)
		maps.Copy(ann, extra)
		return ann
	}
	cases := map[string]struct {
		ann       map[string]string
		wantReset *audit.AnchorResetRecord
		wantErr   string
		pending   bool
	}{
		"never reset": {ann: anchored},
		"reset, the agent anchored since": {
			ann:       with(map[string]string{audit.AnchorReset: "poisoned", audit.AnchorResetBy: "alice", audit.AnchorResetAtSeq: "12"}),
			wantReset: &audit.AnchorResetRecord{By: "alice", Reason: "poisoned", AtSeq: 12},
		},
		"reset, not anchored since": {
			ann:     with(map[string]string{audit.AnchorReset: "poisoned", audit.AnchorResetBy: "alice"}),
			pending: true,
			wantErr: `Lease pipeguard-agent/pipeguard-audit-node-x: audit anchor reset and not anchored since: alice reset it (reason: "poisoned") and the agent on node node-x has not anchored since, so the end of its log cannot be verified yet; verify again once the agent has published its head (every publication interval while it writes records; restarting the agent publishes at once)`,
		},
		"reset-at-seq not a number": {
			ann:     with(map[string]string{audit.AnchorReset: "poisoned", audit.AnchorResetBy: "alice", audit.AnchorResetAtSeq: "twelve"}),
			wantErr: `Lease pipeguard-agent/pipeguard-audit-node-x: annotation audit.pipeguard.io/reset-at-seq "twelve" is not a positive integer`,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			c := fake.NewClientset(&coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{
				Namespace: audit.DefaultAnchorNamespace, Name: audit.AnchorLeaseName("node-x"), Annotations: tc.ann}})
			a, err := ReadAnchor(context.Background(), c, "", "node-x")
			switch {
			case tc.wantErr != "":
				if err == nil || err.Error() != tc.wantErr || errors.Is(err, ErrAnchorResetPending) != tc.pending {
					t.Fatalf("error %v\nwant %s", err, tc.wantErr)
				}
			case err != nil:
				t.Fatal(err)
			case (a.Reset == nil) != (tc.wantReset == nil) || a.Reset != nil && *a.Reset != *tc.wantReset:
				t.Fatalf("reset %+v, want %+v", a.Reset, tc.wantReset)
			}
		})
	}
}

func TestParseAnchor(t *testing.T) {
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	good := audit.Anchor{Node: "n1", Head: audit.Head{Seq: 42, Hash: audit.Link(audit.Genesis(), []byte("x")), File: "audit.log"}, Time: now, AgentStart: now}
	a, err := ParseAnchor("n1", "Lease x/y", good.Annotations())
	if err != nil || a.Seq != 42 || a.Hash != good.Hash || !a.Time.Equal(now) {
		t.Fatalf("round trip: %+v, %v", a, err)
	}
	cases := map[string]struct {
		key, value string
		want       string
	}{
		"another node's anchor": {audit.AnchorNode, "n2", `Lease x/y: annotation audit.pipeguard.io/node is "n2", not node "n1": the anchor belongs to another node`},
		"seq zero":              {audit.AnchorSeq, "0", `Lease x/y: annotation audit.pipeguard.io/seq "0" is not a positive integer`},
		"seq garbage":           {audit.AnchorSeq, "-3", `annotation audit.pipeguard.io/seq "-3" is not a positive integer`},
		"short hash":            {audit.AnchorHash, "abcd", `annotation audit.pipeguard.io/hash: "abcd" is not a SHA-256 hash in hex`},
		"bad time":              {audit.AnchorTime, "yesterday", `annotation audit.pipeguard.io/time "yesterday" is not an RFC 3339 time`},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			ann := good.Annotations()
			ann[tc.key] = tc.value
			_, err := ParseAnchor("n1", "Lease x/y", ann)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want %q", err, tc.want)
			}
		})
	}
}

func anchorAt(n string, seq uint64) audit.Anchor {
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	return audit.Anchor{Node: n, Head: audit.Head{Seq: seq, Hash: audit.Link(audit.Genesis(), []byte{byte(seq)}), File: "audit.log"}, Time: now, AgentStart: now}
}
