package controller_test

import (
	"context"
	"fmt"
	"runtime"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/pipeguard/pipeguard/api/v1alpha1"
	"github.com/pipeguard/pipeguard/controller"
	"github.com/pipeguard/pipeguard/controller/inventory"
	"github.com/pipeguard/pipeguard/internal/testing/samplepods"
	"github.com/pipeguard/pipeguard/policy"
	"github.com/pipeguard/pipeguard/webhook"
)

// memorySource serves stripped pods from memory, as the audit's informer
// cache would; every other kind is empty.
type memorySource struct{ pods []corev1.Pod }

func (m *memorySource) List(_ context.Context, list client.ObjectList, _ ...client.ListOption) error {
	if pl, ok := list.(*corev1.PodList); ok {
		pl.Items = m.pods
		return nil
	}
	return meta.SetList(list, nil)
}

// BenchmarkAuditPass is one full audit pass over 10,000 pods in 1,000
// namespaces under 50 policies: one pod in ten is a CSI node plugin that
// mounts four CSI Proxy pipes without an allowance, the rest mount none.
func BenchmarkAuditPass(b *testing.B) {
	ctx := context.Background()
	const pods, namespaces, policies = 10000, 1000, 50
	var before runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	src := &memorySource{}
	for i := range pods {
		p := samplepods.Plain()
		if i%10 == 0 {
			// The plugin without its HostProcess setting: no allowance.
			p = samplepods.CSINode()
			p.Spec.SecurityContext = nil
			for j := range p.Spec.Containers {
				p.Spec.Containers[j].SecurityContext = nil
			}
		}
		p.Name, p.Namespace = fmt.Sprintf("pod-%d", i), fmt.Sprintf("ns-%d", i%namespaces)
		stripped, err := inventory.Strip(p)
		if err != nil {
			b.Fatal(err)
		}
		src.pods = append(src.pods, *stripped.(*corev1.Pod))
	}
	var after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&after)
	cachedPerPod := float64(after.HeapAlloc-before.HeapAlloc) / pods

	ns := webhook.StaticNamespaces{}
	for i := range namespaces {
		ns[fmt.Sprintf("ns-%d", i)] = map[string]string{"pipeguard.io/team": fmt.Sprintf("t%d", i%100)}
	}
	var pols []v1alpha1.PipeAccessPolicy
	for i := range policies {
		pols = append(pols, v1alpha1.PipeAccessPolicy{
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("p%02d", i)},
			Spec: v1alpha1.PipeAccessPolicySpec{
				Pipes: []string{"csi-proxy-*"},
				Allow: v1alpha1.Allowances{NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"pipeguard.io/team": fmt.Sprintf("x%d", i)}}},
			},
		})
	}
	engine, err := policy.NewEngine(ctx, policy.Options{DecisionCacheSize: 1024})
	if err != nil {
		b.Fatal(err)
	}
	if _, err := engine.Load(ctx, pols); err != nil {
		b.Fatal(err)
	}
	var rep *controller.AuditReport
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		if rep, err = controller.Audit(ctx, src, engine, ns, nil); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	if rep.Objects != pods || len(rep.Results) != pods/10 || len(rep.ByPolicy["p00"]) != 4*pods/10 {
		b.Fatalf("audited %d objects, %d violating, %d violations of p00; want %d, %d, %d", rep.Objects, len(rep.Results), len(rep.ByPolicy["p00"]), pods, pods/10, 4*pods/10)
	}
	var end runtime.MemStats
	runtime.ReadMemStats(&end)
	b.ReportMetric(float64(end.HeapInuse)/(1<<20), "heap-inuse-MiB")
	b.ReportMetric(cachedPerPod, "cached-B/pod")
}
