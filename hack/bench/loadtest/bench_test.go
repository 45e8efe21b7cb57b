package main

import (
	"context"
	"encoding/json"
	"testing"

	admissionv1 "k8s.io/api/admission/v1"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"
)

// BenchmarkHandler reviews each kind of request of the mix with each
// target's handler directly, without HTTP, TLS or the AdmissionReview
// codec: the difference between the baseline and pipeguard-uncached is the
// cost of rego, and pipeguard shows what the decision cache saves of it.
func BenchmarkHandler(b *testing.B) {
	m, err := newMix()
	if err != nil {
		b.Fatal(err)
	}
	for _, target := range []string{TargetBaseline, TargetUncached, TargetPipeguard} {
		h, err := newHandler(context.Background(), target, namespaces(20), 0)
		if err != nil {
			b.Fatal(err)
		}
		for _, k := range m.kinds {
			req := firstRequestOf(b, m, k)
			b.Run(target+"/"+k.name, func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					if resp := h.Handle(context.Background(), req); resp.Allowed != k.allowed {
						b.Fatalf("allowed = %v, want %v", resp.Allowed, k.allowed)
					}
				}
			})
		}
	}
}

func firstRequestOf(b *testing.B, m *mix, k *kind) admission.Request {
	seq := uint64(0)
	for m.slots[seq%uint64(len(m.slots))] != k {
		seq++
	}
	body, _ := m.body(seq, 20, "00000000-0000-4000-8000-000000000000")
	var ar admissionv1.AdmissionReview
	if err := json.Unmarshal(body, &ar); err != nil {
		b.Fatal(err)
	}
	return admission.Request{AdmissionRequest: *ar.Request}
}
