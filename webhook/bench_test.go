package webhook_test

import (
	"context"
	"testing"

	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/pipeguard/pipeguard/internal/samplepods"
)

func benchmarkReview(b *testing.B, req admission.Request, wantAllowed bool) {
	h := newHandler(b)
	ctx := context.Background()
	if resp := h.Handle(ctx, req); resp.Allowed != wantAllowed {
		b.Fatalf("allowed = %v, want %v: %+v", resp.Allowed, wantAllowed, resp.Result)
	}
	b.ReportAllocs()
	b.ResetTimer()
	start := processCPU()
	for b.Loop() {
		h.Handle(ctx, req)
	}
	if cpu := processCPU() - start; cpu > 0 {
		b.ReportMetric(float64(cpu)/float64(b.N), "cpu-ns/op")
	}
}

// BenchmarkReviewCSINodePod: decode, facts, namespace lookup and rego for a
// CSI node pod with four pipe mounts that is allowed (HostProcess).
func BenchmarkReviewCSINodePod(b *testing.B) {
	benchmarkReview(b, podRequest(b, samplepods.CSINode()), true)
}

// BenchmarkReviewDeniedPod: the same pod without HostProcess in an
// unlabelled namespace: four violations with messages.
func BenchmarkReviewDeniedPod(b *testing.B) {
	p := samplepods.CSINode()
	p.Namespace = "team-a"
	p.Spec.Containers[2].SecurityContext = nil
	benchmarkReview(b, podRequest(b, p), false)
}

// BenchmarkReviewPodWithoutHostPath: the common case on a busy cluster.
func BenchmarkReviewPodWithoutHostPath(b *testing.B) {
	p := samplepods.Plain()
	p.Namespace = "team-a"
	benchmarkReview(b, podRequest(b, p), true)
}
