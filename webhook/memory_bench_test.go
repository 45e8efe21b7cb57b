package webhook_test

import (
	"bytes"
	"fmt"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/pipeguard/pipeguard/webhook"
)

// maximalReview is the body of a review at the bounds, just under
// MaxReviewBytes: MaxHostPathVolumes volumes and MaxHostPathMounts mounts,
// with paths (longPaths: as long as MaxHostPathBytes lets every mount's
// path be) and the rest of the bytes in an annotation pipeguard does not
// read.
func maximalReview(b *testing.B, longPaths bool) []byte {
	p := manyMountsPod(webhook.MaxHostPathVolumes, webhook.MaxHostPathMounts)
	if longPaths {
		each := webhook.MaxHostPathBytes / webhook.MaxHostPathMounts
		for i := range p.Spec.Volumes {
			hp := p.Spec.Volumes[i].HostPath
			hp.Path += `\` + strings.Repeat("x", each-len(hp.Path)-1)
		}
	}
	body := reviewBody(b, podRequest(b, p))
	p.Annotations = map[string]string{"pad": strings.Repeat("x", webhook.MaxReviewBytes-len(body)-1024)}
	body = reviewBody(b, podRequest(b, p))
	if len(body) > webhook.MaxReviewBytes {
		b.Fatalf("maximal review of %d bytes, above the bound", len(body))
	}
	return body
}

// BenchmarkReviewMemory: the peak Go heap in use (HeapInuse, sampled
// every millisecond, less the heap in use before) while concurrent
// maximal reviews are served as pipeguard-webhook serves them (Bound
// in front of controller-runtime's admission.Webhook, DefaultMaxInFlight
// slots), every one evaluated by rego. peak-MiB must stay under half the
// Deployment's 512 MiB limit at any concurrency: reviews beyond the slots
// wait.
func BenchmarkReviewMemory(b *testing.B) {
	for _, shape := range []struct {
		name      string
		longPaths bool
	}{{"padded", false}, {"long-paths", true}} {
		body := maximalReview(b, shape.longPaths)
		for _, concurrent := range []int{1, 3, 16} {
			b.Run(fmt.Sprintf("%s/concurrent=%d", shape.name, concurrent), func(b *testing.B) {
				h := newHandler(b)
				srv := httptest.NewServer(webhook.Bound(&admission.Webhook{Handler: h, RecoverPanic: ptr.To(true)}, webhook.ServeOptions{}))
				defer srv.Close()
				client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: concurrent}}
				runtime.GC()
				var base runtime.MemStats
				runtime.ReadMemStats(&base)
				var peak atomic.Uint64
				stop := make(chan struct{})
				sampled := make(chan struct{})
				go func() {
					defer close(sampled)
					var m runtime.MemStats
					for {
						select {
						case <-stop:
							return
						case <-time.After(time.Millisecond):
						}
						runtime.ReadMemStats(&m)
						if m.HeapInuse > peak.Load() {
							peak.Store(m.HeapInuse)
						}
					}
				}()
				b.ResetTimer()
				for b.Loop() {
					var wg sync.WaitGroup
					for range concurrent {
						wg.Go(func() {
							resp, err := client.Post(srv.URL+"?timeout=30s", "application/json", bytes.NewReader(body))
							if err != nil {
								b.Error(err)
								return
							}
							defer resp.Body.Close()
							var out bytes.Buffer
							_, _ = out.ReadFrom(resp.Body)
							if !bytes.Contains(out.Bytes(), []byte(`"allowed":false`)) || !bytes.Contains(out.Bytes(), []byte(`protected-pipe-mount`)) {
								b.Errorf("answer %.300s, want the denial", out.String())
							}
						})
					}
					wg.Wait()
				}
				b.StopTimer()
				close(stop)
				<-sampled
				b.ReportMetric(float64(peak.Load()-min(peak.Load(), base.HeapInuse))/(1<<20), "peak-MiB")
				b.ReportMetric(float64(len(body))/(1<<20), "review-MiB")
			})
		}
	}
}
