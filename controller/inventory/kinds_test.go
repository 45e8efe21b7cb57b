package inventory_test

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/pipeguard/pipeguard/controller/inventory"
)

// TestEveryKindIsStripped: Strip has a case for every reviewed kind, so no
// kind is cached whole, and Objects and KindOf follow Kinds.
func TestEveryKindIsStripped(t *testing.T) {
	objs := inventory.Objects()
	if len(objs) != len(inventory.Kinds) {
		t.Fatalf("Objects returns %d objects for %d kinds", len(objs), len(inventory.Kinds))
	}
	for i, k := range inventory.Kinds {
		obj := objs[i]
		got, ok := inventory.KindOf(obj)
		if !ok || got.GVK != k.GVK {
			t.Errorf("Objects()[%d] is %T, whose kind is %s (%v); want %s", i, obj, got.GVK, ok, k.GVK)
			continue
		}
		obj.SetName("n")
		obj.SetAnnotations(map[string]string{"note": "dropped"})
		out, err := inventory.Strip(obj)
		if err != nil {
			t.Fatalf("Strip(%s): %v", k.GVK.Kind, err)
		}
		if out == any(obj) {
			t.Errorf("Strip passes a %s through whole: give it a case in Strip", k.GVK.Kind)
			continue
		}
		o, ok := out.(client.Object)
		if !ok {
			t.Errorf("Strip(%s) returns a %T", k.GVK.Kind, out)
			continue
		}
		if kk, same := inventory.KindOf(o); !same || kk.GVK != k.GVK || o.GetName() != "n" || o.GetAnnotations() != nil {
			t.Errorf("Strip(%s) = %#v", k.GVK.Kind, out)
		}
	}
	cm := &corev1.ConfigMap{}
	if out, err := inventory.Strip(cm); err != nil || out != any(cm) {
		t.Errorf("Strip(ConfigMap) = %v, %v; want it unchanged", out, err)
	}
	if _, ok := inventory.KindOf(cm); ok {
		t.Error("KindOf(ConfigMap) is a reviewed kind")
	}
}
