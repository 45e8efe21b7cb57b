package webhook

import (
	"reflect"
	"testing"

	"github.com/pipeguard/pipeguard/policy"
)

// TestMountKeyCoversEveryFact: two mounts that differ in any fact podFacts
// fills in have different keys, so newMounts never takes a changed mount
// for one the pod already had. A field added to policy.Mount fails this
// test until keyOf reads it.
func TestMountKeyCoversEveryFact(t *testing.T) {
	typ := reflect.TypeOf(policy.Mount{})
	for i := range typ.NumField() {
		f := typ.Field(i)
		if f.Name == "ProtectedBy" { // the engine's, not podFacts'
			continue
		}
		var m policy.Mount
		v := reflect.ValueOf(&m).Elem().Field(i)
		switch f.Type.Kind() {
		case reflect.String:
			v.SetString("x")
		case reflect.Bool:
			v.SetBool(true)
		default:
			t.Fatalf("policy.Mount.%s is a %s: teach keyOf and this test about it", f.Name, f.Type)
		}
		if keyOf(m) == keyOf(policy.Mount{}) {
			t.Errorf("keyOf ignores policy.Mount.%s", f.Name)
		}
	}
}
