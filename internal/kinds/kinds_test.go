package kinds

import (
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	extensionsv1beta1 "k8s.io/api/extensions/v1beta1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
)

// TestTableIsWholeAndUnique: every entry names its kind once, with a
// resource, a layout the webhook reads and constructors whose types are
// that kind and its list, as the API machinery registers them.
func TestTableIsWholeAndUnique(t *testing.T) {
	names := map[string]bool{}
	resources := map[schema.GroupResource]bool{}
	for _, k := range All() {
		if names[k.GVK.Kind] {
			t.Errorf("kind %s is in the table twice; kind names must be unique, callers key on them", k.GVK.Kind)
		}
		names[k.GVK.Kind] = true
		gr := schema.GroupResource{Group: k.GVK.Group, Resource: k.Resource}
		if k.Resource == "" || resources[gr] {
			t.Errorf("%s: resource %q is empty or named twice", k.GVK, k.Resource)
		}
		resources[gr] = true
		if k.Layout < LayoutPod || k.Layout > LayoutPersistentVolume {
			t.Errorf("%s: layout %d is none the webhook reads", k.GVK, k.Layout)
		}
		if k.New == nil || k.NewList == nil {
			t.Errorf("%s: no New or NewList", k.GVK)
			continue
		}
		if gvks, _, err := clientgoscheme.Scheme.ObjectKinds(k.New()); err != nil || len(gvks) != 1 || gvks[0] != k.GVK {
			t.Errorf("%s: New makes %T, registered as %v (%v)", k.GVK, k.New(), gvks, err)
		}
		want := k.GVK.GroupVersion().WithKind(k.GVK.Kind + "List")
		if gvks, _, err := clientgoscheme.Scheme.ObjectKinds(k.NewList()); err != nil || len(gvks) != 1 || gvks[0] != want {
			t.Errorf("%s: NewList makes %T, registered as %v (%v), want %s", k.GVK, k.NewList(), gvks, err, want)
		}
		if got, ok := ForObject(k.New()); !ok || got.GVK != k.GVK {
			t.Errorf("ForObject(%T) = %s, %v; want %s", k.New(), got.GVK, ok, k.GVK)
		}
		if got, ok := Lookup(k.GVK.GroupKind()); !ok || got.GVK != k.GVK {
			t.Errorf("Lookup(%s) = %s, %v", k.GVK.GroupKind(), got.GVK, ok)
		}
	}
	if len(names) != 10 {
		t.Errorf("the table holds %d kinds, want 10: update this test, config/webhook/manifests.yaml and docs/writing-policies.md together", len(names))
	}
}

// TestNotReviewed: look-alikes of reviewed kinds (another group, another
// case, a list) and typed objects of other kinds are not reviewed.
func TestNotReviewed(t *testing.T) {
	for _, gk := range []schema.GroupKind{
		{}, {Kind: "Namespace"}, {Kind: "ConfigMap"}, {Kind: "pod"}, {Kind: "Pods"}, {Kind: "PodList"},
		{Group: "extensions", Kind: "DaemonSet"}, {Group: "apps", Kind: "Pod"}, {Group: "batch", Kind: "Deployment"},
		{Group: "apps ", Kind: "Deployment"}, {Group: "Apps", Kind: "Deployment"}, {Kind: "CronJob"},
		{Group: "storage.k8s.io", Kind: "CSIDriver"}, {Kind: "Pod\x00"},
	} {
		if Reviewed(gk) {
			t.Errorf("Reviewed(%q, %q) = true", gk.Group, gk.Kind)
		}
	}
	for _, obj := range []Object{nil, (*corev1.ConfigMap)(nil), &corev1.Namespace{}, &extensionsv1beta1.DaemonSet{}, &appsv1.ControllerRevision{}} {
		if k, ok := ForObject(obj); ok {
			t.Errorf("ForObject(%T) = %s", obj, k.GVK)
		}
	}
}

// TestAllIsACopy: a caller that changes what All returned changes nothing
// anyone else reads.
func TestAllIsACopy(t *testing.T) {
	a := All()
	a[0].GVK.Kind = "ConfigMap"
	a[0].Subresources[0] = "exec"
	a = append(a[:1], a[2:]...)
	b := All()
	if b[0].GVK.Kind != "Pod" || b[0].Subresources[0] != "ephemeralcontainers" || len(b) != 10 {
		t.Errorf("All after a caller changed its copy: %s %v, %d kinds", b[0].GVK.Kind, b[0].Subresources, len(b))
	}
	if !Reviewed(schema.GroupKind{Kind: "Pod"}) || Reviewed(schema.GroupKind{Kind: "ConfigMap"}) {
		t.Error("Reviewed changed with a caller's copy of All")
	}
	if k, _ := ForObject(&appsv1.Deployment{}); k.GVK.Kind != "Deployment" {
		t.Errorf("ForObject(Deployment) = %s", k.GVK)
	}
}
