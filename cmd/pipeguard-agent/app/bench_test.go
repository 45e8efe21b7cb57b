package app

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
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
// calls/s of each and the overhead of the guard in percent and, on Linux,
// the CPU time the process (agent and clients) spent per call on each
// and the guard's share of it in percent: CPU time per call does not
// depend on what else runs on the machine, as calls/s does.
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
				var cpuPlain, cpuGuarded time.Duration
				cpuOK := true
				run := func(r *running, cs []fsv1.FilesystemClient, n int, cpu *time.Duration) time.Duration {
					f := call(r)
					cpu0, ok0 := processCPU()
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
					elapsed := time.Since(begin)
					cpu1, ok1 := processCPU()
					cpuOK = cpuOK && ok0 && ok1
					*cpu += cpu1 - cpu0
					return elapsed
				}
				const batch = 500
				var tPlain, tGuarded time.Duration
				b.ResetTimer()
				for done := 0; done < b.N; done += batch {
					n := min(batch, b.N-done)
					tPlain += run(plain, plainCs, n, &cpuPlain)
					tGuarded += run(guarded.running, guardedCs, n, &cpuGuarded)
				}
				plainRate := float64(b.N) / tPlain.Seconds()
				guardedRate := float64(b.N) / tGuarded.Seconds()
				b.ReportMetric(plainRate, "ungated-calls/s")
				b.ReportMetric(guardedRate, "guarded-calls/s")
				b.ReportMetric((plainRate/guardedRate-1)*100, "overhead-%")
				if cpuOK {
					b.ReportMetric(float64(cpuPlain.Microseconds())/float64(b.N), "ungated-cpu-µs/call")
					b.ReportMetric(float64(cpuGuarded.Microseconds())/float64(b.N), "guarded-cpu-µs/call")
					b.ReportMetric((float64(cpuGuarded)/float64(cpuPlain)-1)*100, "cpu-overhead-%")
				}
			})
		}
	}
}

// processCPU is the time the threads of this process have run on a CPU,
// summed from /proc/self/task/*/schedstat (nanoseconds, unlike the clock
// ticks of /proc/self/stat); ok is false where there is no such file.
// Threads that ended are left out: the Go runtime keeps its threads.
func processCPU() (time.Duration, bool) {
	tasks, err := os.ReadDir("/proc/self/task")
	if err != nil {
		return 0, false
	}
	var total time.Duration
	for _, t := range tasks {
		b, err := os.ReadFile("/proc/self/task/" + t.Name() + "/schedstat")
		if err != nil {
			continue // the thread ended
		}
		f := strings.Fields(string(b))
		if len(f) == 0 {
			return 0, false
		}
		ns, err := strconv.ParseInt(f[0], 10, 64)
		if err != nil {
			return 0, false
		}
		total += time.Duration(ns)
	}
	return total, true
}
