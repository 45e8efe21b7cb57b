package anchor_test

import (
	"context"
	"errors"
	"maps"
	"testing"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/pipeguard/pipeguard/agent/audit"
	"github.com/pipeguard/pipeguard/agent/audit/anchor"
)

// TestReadReportsAReset reads anchors in each state a reset leaves them in.
func TestReadReportsAReset(t *testing.T) {
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
				Namespace: anchor.DefaultNamespace, Name: audit.AnchorLeaseName("node-x"), Annotations: tc.ann}})
			a, err := anchor.Read(context.Background(), c, "", "node-x")
			switch {
			case tc.wantErr != "":
				if err == nil || err.Error() != tc.wantErr || errors.Is(err, audit.ErrAnchorResetPending) != tc.pending {
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

// TestWriteAfterAResetRecordsWhereItAnchored checks that the agent's first
// anchor after a reset sets reset-at-seq to its seq, keeps the reset, and
// that later anchors leave reset-at-seq alone.
func TestWriteAfterAResetRecordsWhereItAnchored(t *testing.T) {
	ann := anchorAt("node-x", 999999999999999999).Annotations()
	ann[audit.AnchorReset] = "poisoned"
	ann[audit.AnchorResetBy] = "alice"
	c := fake.NewClientset(&coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{
		Namespace: anchor.DefaultNamespace, Name: audit.AnchorLeaseName("node-x"), Annotations: ann}})
	ctx := context.Background()
	for _, seq := range []uint64{12, 15} {
		if err := anchor.Write(ctx, c, anchor.DefaultNamespace, anchorAt("node-x", seq)); err != nil {
			t.Fatal(err)
		}
	}
	a, err := anchor.Read(ctx, c, "", "node-x")
	if err != nil {
		t.Fatal(err)
	}
	if a.Seq != 15 || a.Reset == nil || *a.Reset != (audit.AnchorResetRecord{By: "alice", Reason: "poisoned", AtSeq: 12}) {
		t.Fatalf("anchor %v, reset %+v; want seq 15, reset by alice at seq 12", a, a.Reset)
	}
}
