package app

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	fsv1 "github.com/kubernetes-csi/csi-proxy/client/api/filesystem/v1"

	"github.com/pipeguard/pipeguard/agent/guard"
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

// BenchmarkGuardOverhead compares, in one run, the same calls on an agent
// with gate and audit on (shipped rules, Metadata level, default
// durability: mutating calls fsync their write-ahead record, group
// committed) and on an agent with both off. The calls alternate between
// the two in batches so both see the same machine load. It reports the
// calls/s of each and the overhead of the guard in percent.
func BenchmarkGuardOverhead(b *testing.B) {
	for _, op := range []string{"PathExists", "Mkdir"} {
		for _, clients := range []int{1, 16} {
			b.Run(fmt.Sprintf("op=%s/clients=%d", op, clients), func(b *testing.B) {
				plain := start(b, Options{})
				guarded := startGuarded(b, Options{}, guard.Options{}, nil)
				call := func(r *running) func(c fsv1.FilesystemClient) error {
					req := &fsv1.PathExistsRequest{Path: r.kubelet + "/pods"}
					mk := &fsv1.MkdirRequest{Path: r.kubelet + "/pods/x"}
					return func(c fsv1.FilesystemClient) error {
						var err error
						if op == "Mkdir" {
							_, err = c.Mkdir(context.Background(), mk)
						} else {
							_, err = c.PathExists(context.Background(), req)
						}
						return err
					}
				}
				clientsOf := func(r *running) []fsv1.FilesystemClient {
					cs := make([]fsv1.FilesystemClient, clients)
					for i := range cs {
						cs[i] = fsv1.NewFilesystemClient(r.dial(b, "filesystem", "v1"))
						if err := call(r)(cs[i]); err != nil {
							b.Fatal(err) // connect before the clock starts
						}
					}
					return cs
				}
				plainCs, guardedCs := clientsOf(plain), clientsOf(guarded.running)
				run := func(r *running, cs []fsv1.FilesystemClient, n int) time.Duration {
					f := call(r)
					begin := time.Now()
					var wg sync.WaitGroup
					for i, c := range cs {
						k := n / clients
						if i < n%clients {
							k++
						}
						wg.Go(func() {
							for range k {
								if err := f(c); err != nil {
									b.Error(err)
									return
								}
							}
						})
					}
					wg.Wait()
					return time.Since(begin)
				}
				const batch = 500
				var tPlain, tGuarded time.Duration
				b.ResetTimer()
				for done := 0; done < b.N; done += batch {
					n := min(batch, b.N-done)
					tPlain += run(plain, plainCs, n)
					tGuarded += run(guarded.running, guardedCs, n)
				}
				plainRate := float64(b.N) / tPlain.Seconds()
				guardedRate := float64(b.N) / tGuarded.Seconds()
				b.ReportMetric(plainRate, "ungated-calls/s")
				b.ReportMetric(guardedRate, "guarded-calls/s")
				b.ReportMetric((plainRate/guardedRate-1)*100, "overhead-%")
			})
		}
	}
}
