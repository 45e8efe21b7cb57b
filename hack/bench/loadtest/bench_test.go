//go:build unix

package main

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"syscall"
	"testing"

	"github.com/go-logr/logr"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"
)

// BenchmarkServe serves each mix, and each kind of request of the deployed
// mix, with each target's handler behind controller-runtime's
// admission.Webhook (decoding the review, encoding the response) but
// without TLS and sockets, and reports the process's CPU time per review
// beside the wall time: the difference between a target and the floor is
// what the target adds to a review, repeatably even on a busy machine. The
// requests of a whole mix are made as the load makes them, so those of the
// pipes and denials mixes are each unique.
func BenchmarkServe(b *testing.B) {
	ctrl.SetLogger(logr.Discard())
	for _, target := range []string{TargetFloor, TargetPipeguard} {
		h, err := newHandler(context.Background(), targetOf(target))
		if err != nil {
			b.Fatal(err)
		}
		wh := &admission.Webhook{Handler: h, RecoverPanic: ptr.To(true)}
		for _, name := range mixes {
			m, err := newMix(name)
			if err != nil {
				b.Fatal(err)
			}
			seq := uint64(0)
			b.Run(target+"/"+name, func(b *testing.B) {
				serve(b, wh, func() []byte { seq++; body, _ := m.body(seq, 20, uidPlaceholder); return body })
			})
			for _, k := range m.kinds {
				var bodies [][]byte
				for seq := range uint64(len(m.slots)) {
					if body, kk := m.body(seq, 20, uidPlaceholder); kk == k && name == MixDeployed {
						bodies = append(bodies, body)
					}
				}
				if len(bodies) > 0 {
					b.Run(target+"/"+k.name, func(b *testing.B) { serve(b, wh, func() []byte { seq++; return bodies[seq%uint64(len(bodies))] }) })
				}
			}
		}
	}
}

// serve has wh answer the requests next returns and reports the CPU time
// per request.
func serve(b *testing.B, wh http.Handler, next func() []byte) {
	b.ReportAllocs()
	start := cpuTime()
	for b.Loop() {
		req := httptest.NewRequest(http.MethodPost, "/validate", bytes.NewReader(next()))
		req.Header.Set("Content-Type", "application/json")
		w := httptest.NewRecorder()
		wh.ServeHTTP(w, req)
		if w.Code != http.StatusOK {
			b.Fatalf("HTTP %d: %s", w.Code, w.Body)
		}
	}
	b.ReportMetric(float64(cpuTime()-start)/float64(b.N), "cpu-ns/op")
}

func cpuTime() int64 {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return ru.Utime.Nano() + ru.Stime.Nano()
}
