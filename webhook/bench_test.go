package webhook_test

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/pipeguard/pipeguard/api/v1alpha1"
	"github.com/pipeguard/pipeguard/internal/testing/samplepods"
	"github.com/pipeguard/pipeguard/policy"
	"github.com/pipeguard/pipeguard/webhook"
)

// benchmarkReview reviews req over and over with a handler whose engine
// remembers cacheSize decisions (0: every review evaluates rego) and has
// policies in force (none: the default policy).
func benchmarkReview(b *testing.B, req admission.Request, wantAllowed bool, cacheSize int, policies ...v1alpha1.PipeAccessPolicy) {
	benchmarkReviewPer(b, req, wantAllowed, cacheSize, 0, "", policies...)
}

// benchmarkReviewPer is benchmarkReview that also reports CPU time per
// unit of the object (per mount, say) when per is above zero.
func benchmarkReviewPer(b *testing.B, req admission.Request, wantAllowed bool, cacheSize int, per float64, unit string, policies ...v1alpha1.PipeAccessPolicy) {
	e, err := policy.NewEngine(context.Background(), policy.Options{DecisionCacheSize: cacheSize})
	if err != nil {
		b.Fatal(err)
	}
	if _, err := e.Load(context.Background(), policies); err != nil {
		b.Fatal(err)
	}
	h := webhook.NewHandler(webhook.Options{Engine: e, Namespaces: testNamespaces})
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
		if per > 0 {
			b.ReportMetric(float64(cpu)/float64(b.N)/per, "cpu-ns/"+unit)
		}
	}
}

// deniedCSINodePod is the CSI node pod without HostProcess, in a namespace without
// an allowance.
func deniedCSINodePod() *corev1.Pod {
	p := samplepods.CSINode()
	p.Namespace = "team-a"
	p.Spec.Containers[2].SecurityContext = nil
	return p
}

// BenchmarkReviewCSINodePod: decode, facts, namespace lookup and rego for a
// CSI node pod with four pipe mounts that is allowed (HostProcess); every
// review evaluates rego.
func BenchmarkReviewCSINodePod(b *testing.B) {
	benchmarkReview(b, podRequest(b, samplepods.CSINode()), true, 0)
}

// BenchmarkReviewCSINodePodCached: the same pod as deployed, with the
// decision cache on: after the first pod of a DaemonSet, its siblings on
// other nodes are decided from the cache.
func BenchmarkReviewCSINodePodCached(b *testing.B) {
	benchmarkReview(b, podRequest(b, samplepods.CSINode()), true, 4096)
}

// BenchmarkReviewCSINodePodAdminRego: the same pod under a generation in
// which the default policy also carries a rule of its own (the
// ServiceAccount rule of docs/writing-policies.md): the shipped rules'
// decision comes from the cache and the admin rule runs on every review.
func BenchmarkReviewCSINodePodAdminRego(b *testing.B) {
	p := policy.DefaultPolicy()
	p.Name = "csi-proxy"
	p.Spec.Rego = []v1alpha1.RegoModule{{Name: "sa.rego", Source: `package pipeguard.admission.smbdriver

violation contains {"rule": "smb-sa-only", "msg": msg} if {
	some m in input.mounts
	startswith(m.pipe, "csi-proxy-smb-")
	input.pod.serviceAccountName != "csi-smb-node-sa"
	msg := sprintf("container %q mounts %s but the pod runs as ServiceAccount %q; only csi-smb-node-sa may", [m.container, m.path, input.pod.serviceAccountName])
}
`}}
	benchmarkReview(b, podRequest(b, samplepods.CSINode()), true, 4096, p)
}

// BenchmarkReviewDeniedPod: the same pod without HostProcess in an
// unlabelled namespace: four violations with messages, evaluated each time.
func BenchmarkReviewDeniedPod(b *testing.B) {
	benchmarkReview(b, podRequest(b, deniedCSINodePod()), false, 0)
}

// BenchmarkReviewDeniedPodCached: the denied pod with the decision cache
// on, as when a controller retries creating it.
func BenchmarkReviewDeniedPodCached(b *testing.B) {
	benchmarkReview(b, podRequest(b, deniedCSINodePod()), false, 4096)
}

// BenchmarkReviewPodWithoutHostPath: the common case on a busy cluster.
func BenchmarkReviewPodWithoutHostPath(b *testing.B) {
	p := samplepods.Plain()
	p.Namespace = "team-a"
	benchmarkReview(b, podRequest(b, p), true, 4096)
}
