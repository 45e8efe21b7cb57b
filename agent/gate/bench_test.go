package gate

import (
	"context"
	"os"
	"testing"

	"github.com/go-logr/logr"
)

// BenchmarkDecide measures one decision with the sample admin policy in
// force, for an allowed filesystem call and a denied disk call: repeated
// inputs, as a CSI driver sends them, which the decision cache answers,
// and (-evaluated) the rules' evaluation on every call.
func BenchmarkDecide(b *testing.B) {
	b.ReportAllocs()
	src, err := readFile(sample)
	if err != nil {
		b.Fatal(err)
	}
	dir := b.TempDir()
	if err := writeFile(dir+"/sample.rego", src); err != nil {
		b.Fatal(err)
	}
	e, err := New(context.Background(), Options{Log: logr.Discard(), PolicyDir: dir})
	if err != nil {
		b.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		in   *Input
		deny bool
	}{
		{"allow", &Input{Group: "filesystem", Version: "v1", Method: "Mkdir", FullMethod: "/v1.Filesystem/Mkdir", Mutating: true,
			Caller: csiNode, Request: map[string]any{"path": "/var/lib/kubelet/pods/x"}}, false},
		{"deny", &Input{Group: "disk", Version: "v1", Method: "PartitionDisk", FullMethod: "/v1.Disk/PartitionDisk", Mutating: true,
			Caller: debugPod, Request: map[string]any{"disk_number": uint64(1)}}, true},
	} {
		b.Run(tc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				d, err := e.Decide(context.Background(), tc.in)
				if err != nil || d.Allowed == tc.deny {
					b.Fatal(d, err)
				}
			}
		})
		b.Run(tc.name+"-evaluated", func(b *testing.B) {
			b.ReportAllocs()
			gen := e.current.Load()
			for b.Loop() {
				d, err := gen.decide(context.Background(), tc.in)
				if err != nil || d.Allowed == tc.deny {
					b.Fatal(d, err)
				}
			}
		})
	}
}

func readFile(p string) ([]byte, error)  { return os.ReadFile(p) }
func writeFile(p string, b []byte) error { return os.WriteFile(p, b, 0o644) }
