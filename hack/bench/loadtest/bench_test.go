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

// BenchmarkServe serves each kind of request of the mix, and the mix in
// its proportions, with each target's handler behind controller-runtime's
// admission.Webhook (decoding the review, encoding the response) but
// without TLS and sockets, and reports the process's CPU time per review
// beside the wall time: the difference between a target and the floor is
// what the target adds to a review, repeatably even on a busy machine.
func BenchmarkServe(b *testing.B) {
	ctrl.SetLogger(logr.Discard())
	m, err := newMix()
	if err != nil {
		b.Fatal(err)
	}
	for _, target := range []string{TargetFloor, TargetPipeguard, TargetUncached} {
		h, err := newHandler(context.Background(), targetOf(target))
		if err != nil {
			b.Fatal(err)
		}
		wh := &admission.Webhook{Handler: h, RecoverPanic: ptr.To(true)}
		for _, k := range append([]*kind{nil}, m.kinds...) {
			name := "mix"
			if k != nil {
				name = k.name
			}
			b.Run(target+"/"+name, func(b *testing.B) {
				var bodies [][]byte
				for seq := range uint64(len(m.slots)) {
					if body, kk := m.body(seq, 20, "00000000-0000-4000-8000-000000000000"); k == nil || kk == k {
						bodies = append(bodies, body)
					}
				}
				b.ReportAllocs()
				start, i := cpuTime(), 0
				for b.Loop() {
					req := httptest.NewRequest(http.MethodPost, "/validate", bytes.NewReader(bodies[i%len(bodies)]))
					req.Header.Set("Content-Type", "application/json")
					w := httptest.NewRecorder()
					wh.ServeHTTP(w, req)
					if w.Code != http.StatusOK {
						b.Fatalf("HTTP %d: %s", w.Code, w.Body)
					}
					i++
				}
				b.ReportMetric(float64(cpuTime()-start)/float64(b.N), "cpu-ns/op")
			})
		}
	}
}

func cpuTime() int64 {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return ru.Utime.Nano() + ru.Stime.Nano()
}
