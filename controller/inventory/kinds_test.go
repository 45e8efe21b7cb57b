package inventory_test

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/pipeguard/pipeguard/controller/inventory"
	"github.com/pipeguard/pipeguard/internal/kinds"
)

// TestEveryKindIsStripped: Strip has a case for every reviewed kind, so no
// kind is cached whole, and a stripped object is still of its kind.
func TestEveryKindIsStripped(t *testing.T) {
	for _, k := range kinds.All() {
		obj := k.New()
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
		if kk, same := kinds.ForObject(o); !same || kk.GVK != k.GVK || o.GetName() != "n" || o.GetAnnotations() != nil {
			t.Errorf("Strip(%s) = %#v", k.GVK.Kind, out)
		}
	}
	cm := &corev1.ConfigMap{}
	if out, err := inventory.Strip(cm); err != nil || out != any(cm) {
		t.Errorf("Strip(ConfigMap) = %v, %v; want it unchanged", out, err)
	}
}
