package anchor_test

import (
	"context"
	"testing"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/pipeguard/pipeguard/agent/audit"
	"github.com/pipeguard/pipeguard/agent/audit/anchor"
	"github.com/pipeguard/pipeguard/agent/audit/review"
)

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
	a, err := review.ReadAnchor(ctx, c, "", "node-x")
	if err != nil {
		t.Fatal(err)
	}
	if a.Seq != 15 || a.Reset == nil || *a.Reset != (audit.AnchorResetRecord{By: "alice", Reason: "poisoned", AtSeq: 12}) {
		t.Fatalf("anchor %v, reset %+v; want seq 15, reset by alice at seq 12", a, a.Reset)
	}
}
