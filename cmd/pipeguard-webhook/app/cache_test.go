package app

import (
	"context"
	"reflect"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"

	"github.com/pipeguard/pipeguard/internal/testing/testenv"
	"github.com/pipeguard/pipeguard/policy"
)

// namespace is a namespace as the API server sends it to a metadata
// informer: labels, and what kubectl apply and the field manager add.
func namespace() *metav1.PartialObjectMetadata {
	ns := namespaceMetadata()
	ns.Name, ns.UID, ns.ResourceVersion = "csi-driver", "4c1f", "812"
	ns.Labels = map[string]string{"kubernetes.io/metadata.name": "csi-driver", policy.AllowLabel: "true"}
	ns.Annotations = map[string]string{
		corev1.LastAppliedConfigAnnotation: `{"apiVersion":"v1","kind":"Namespace","metadata":{"annotations":{},"labels":{"` +
			policy.AllowLabel + `":"true"},"name":"csi-driver"}}` + strings.Repeat(" ", 400),
	}
	ns.ManagedFields = []metav1.ManagedFieldsEntry{
		{Manager: "kubectl-client-side-apply", Operation: metav1.ManagedFieldsOperationUpdate, APIVersion: "v1", Time: &metav1.Time{Time: time.Unix(1.7e9, 0)},
			FieldsType: "FieldsV1", FieldsV1: &metav1.FieldsV1{Raw: []byte(`{"f:metadata":{"f:annotations":{".":{},"f:kubectl.kubernetes.io/last-applied-configuration":{}},"f:labels":{".":{},"f:kubernetes.io/metadata.name":{},"f:pipeguard.io/allow-csi-proxy":{}}}}`)}},
	}
	ns.OwnerReferences = []metav1.OwnerReference{{APIVersion: "v1", Kind: "ConfigMap", Name: "owner", UID: "9a", Controller: ptr.To(false)}}
	return ns
}

// The namespace cache keeps a namespace's name, labels and the metadata
// the informer works with, and nothing else.
func TestNamespaceNameAndLabels(t *testing.T) {
	full := namespace()
	out, err := namespaceNameAndLabels(full.DeepCopy())
	if err != nil {
		t.Fatal(err)
	}
	got, ok := out.(*metav1.PartialObjectMetadata)
	if !ok {
		t.Fatalf("transform returned %T, want *metav1.PartialObjectMetadata", out)
	}
	want := full.DeepCopy()
	want.Annotations, want.ManagedFields, want.OwnerReferences = nil, nil, nil
	if !reflect.DeepEqual(got, want) {
		t.Errorf("cached namespace\n%+v\nwant\n%+v", got, want)
	}

	tombstone := toolscache.DeletedFinalStateUnknown{Key: "csi-driver", Obj: full}
	if out, err := namespaceNameAndLabels(tombstone); err != nil || !reflect.DeepEqual(out, tombstone) {
		t.Errorf("tombstone became %+v, %v; want it kept as it is", out, err)
	}
}

// The transform is set for namespaces, and only for them.
func TestCacheOptionsStripNamespaces(t *testing.T) {
	opts := cacheOptions()
	if len(opts.ByObject) != 1 || opts.DefaultTransform != nil {
		t.Fatalf("cache options %+v; want one ByObject entry and no default transform", opts)
	}
	for obj, by := range opts.ByObject {
		gvk, err := apiutil.GVKForObject(obj, nil)
		if err != nil || gvk != corev1.SchemeGroupVersion.WithKind("Namespace") {
			t.Errorf("ByObject key is %v (%v), want the Namespace kind", gvk, err)
		}
		out, _ := by.Transform(namespace())
		if ns := out.(*metav1.PartialObjectMetadata); len(ns.Annotations)+len(ns.ManagedFields) > 0 || len(ns.Labels) != 2 {
			t.Errorf("the namespace transform left %+v", ns.ObjectMeta)
		}
	}
}

// BenchmarkNamespaceCopy: the copy of a namespace that each review's cache
// read makes, as the API server sends it and as pipeguard caches it.
func BenchmarkNamespaceCopy(b *testing.B) {
	full := namespace()
	stripped, _ := namespaceNameAndLabels(namespace())
	for _, c := range []struct {
		name string
		ns   *metav1.PartialObjectMetadata
	}{{"as-sent", full}, {"as-cached", stripped.(*metav1.PartialObjectMetadata)}} {
		ns := c.ns
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				_ = ns.DeepCopy()
			}
		})
	}
}

// On a real API server, the namespace a review reads from the cache has
// its labels and no annotations or managed fields.
func TestNamespaceCacheOnControlPlane(t *testing.T) {
	env := testenv.Start(t, testenv.Options{})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	c, err := cache.New(env.Config, cacheOptions())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.GetInformer(ctx, namespaceMetadata()); err != nil {
		t.Fatal(err)
	}
	go func() { _ = c.Start(ctx) }()
	if !c.WaitForCacheSync(ctx) {
		t.Fatal("the namespace cache never synced")
	}
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "csi-driver",
		Labels:      map[string]string{policy.AllowLabel: "true"},
		Annotations: map[string]string{corev1.LastAppliedConfigAnnotation: `{"kind":"Namespace"}`}}}
	if err := env.Client.Create(ctx, ns); err != nil {
		t.Fatal(err)
	}
	var got *metav1.PartialObjectMetadata
	if err := wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		got = namespaceMetadata()
		err := c.Get(ctx, client.ObjectKey{Name: "csi-driver"}, got)
		return err == nil, nil
	}); err != nil {
		t.Fatalf("namespace csi-driver never reached the cache: %v", err)
	}
	if got.Labels[policy.AllowLabel] != "true" || len(got.Annotations) > 0 || len(got.ManagedFields) > 0 {
		t.Errorf("cached namespace: labels %v, annotations %v, %d managed fields; want the labels alone",
			got.Labels, got.Annotations, len(got.ManagedFields))
	}
}
