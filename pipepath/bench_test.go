package pipepath

import "testing"

func BenchmarkClassify(b *testing.B) {
	for name, in := range map[string]string{
		"pipe":          `\\.\pipe\csi-proxy-disk-v1`,
		"odd pipe":      `//LocalHost/PIPE/x/../Csi-Proxy-Disk-V1.`,
		"ordinary":      `C:\var\lib\kubelet\pods`,
		"ordinary unix": `/var/lib/kubelet/pods`,
	} {
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				Classify(in)
			}
		})
	}
}
