package policy_test

import (
	"fmt"
	"testing"

	"github.com/pipeguard/pipeguard/policy"
)

// BenchmarkMessages: the messages of n violations of one container that
// differ only in their target, which Messages joins into one. The cost per
// violation must stay flat as n grows.
func BenchmarkMessages(b *testing.B) {
	for _, n := range []int{16, 256, 1024, 4096} {
		b.Run(fmt.Sprintf("n=%d", n), func(b *testing.B) {
			vs := make([]policy.Violation, n)
			for i := range vs {
				vs[i] = policy.Violation{Rule: "protected-pipe-mount", Action: policy.Deny,
					Subject: `container "app"`, Target: fmt.Sprintf(`\\.\pipe\csi-proxy-disk-v%d through volume "v%d"`, i, i),
					Reason: "it is not privileged", Remedy: "run the container as privileged"}
			}
			b.ReportAllocs()
			for b.Loop() {
				policy.Messages(vs)
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(n), "ns/violation")
		})
	}
}
