package policy_test

import (
	"context"
	"testing"

	"github.com/pipeguard/pipeguard/policy"
)

// BenchmarkEvaluateCSINodePod: four pipe mounts of a HostProcess driver
// container, all allowed, under the default policy.
func BenchmarkEvaluateCSINodePod(b *testing.B) {
	e, err := policy.NewEngine(context.Background(), policy.Options{})
	if err != nil {
		b.Fatal(err)
	}
	var mounts []policy.Mount
	for _, pipe := range []string{"csi-proxy-disk-v1", "csi-proxy-filesystem-v1", "csi-proxy-volume-v1", "csi-proxy-system-v1alpha1"} {
		m := diskPipeMount()
		m.Container, m.Volume, m.Pipe, m.Path, m.HostProcess = "azuredisk", pipe, pipe, `\\.\pipe\`+pipe, true
		mounts = append(mounts, m)
	}
	in := podInput("kube-system", map[string]string{"kubernetes.io/metadata.name": "kube-system"}, mounts...)
	ctx := context.Background()
	d, err := e.Evaluate(ctx, in)
	if err != nil || d.Denied() {
		b.Fatalf("decision %+v, %v; want an allow", d, err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := e.Evaluate(ctx, in); err != nil {
			b.Fatal(err)
		}
	}
}
