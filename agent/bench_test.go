package agent

import (
	"context"
	"fmt"
	"sync"
	"testing"

	fsv1 "github.com/kubernetes-csi/csi-proxy/client/api/filesystem/v1"
)

// BenchmarkFilesystemV1PathExists measures filesystem v1 PathExists over a
// unix socket, through the whole request path (metrics, error shape,
// confinement with symlink resolution, Lstat), with 1 and 16 clients, each
// on its own connection.
func BenchmarkFilesystemV1PathExists(b *testing.B) {
	for _, clients := range []int{1, 16} {
		b.Run(fmt.Sprintf("clients=%d", clients), func(b *testing.B) {
			r := start(b, Options{})
			cs := make([]fsv1.FilesystemClient, clients)
			for i := range cs {
				cs[i] = fsv1.NewFilesystemClient(r.dial(b, "filesystem", "v1"))
				if _, err := cs[i].PathExists(context.Background(), &fsv1.PathExistsRequest{Path: r.kubelet}); err != nil {
					b.Fatal(err) // connect before the clock starts
				}
			}
			req := &fsv1.PathExistsRequest{Path: r.kubelet + "/pods"}
			b.ResetTimer()
			var wg sync.WaitGroup
			for i, c := range cs {
				n := b.N / clients
				if i < b.N%clients {
					n++
				}
				wg.Go(func() {
					for range n {
						if _, err := c.PathExists(context.Background(), req); err != nil {
							b.Error(err)
							return
						}
					}
				})
			}
			wg.Wait()
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "calls/s")
		})
	}
}
