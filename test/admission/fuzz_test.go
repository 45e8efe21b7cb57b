package admission_test

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
)

// FuzzPrefilterKeepsPipes fails when a host path, or a host path with a
// subPath, that pipepath protects (Pipe or Ambiguous) is kept from the
// webhook by the matchConditions, for any reviewed kind and for any
// container list the mount sits in.
func FuzzPrefilterKeepsPipes(f *testing.F) {
	c := loadCorpus(f)
	for i, p := range c.paths {
		f.Add(p, "", uint8(i))
		f.Add(bases[i%len(bases)], p, uint8(i))
	}
	flt := loadFilter(f)
	f.Fuzz(func(t *testing.T, path, sub string, pick uint8) {
		k := podKinds[int(pick)%len(podKinds)]
		spec := mountSpec(path, sub, false, int(pick/16)%places)
		if why, ok := protectedSpec(&spec); ok && !flt.sends(t, k, k.wrap(spec)) {
			t.Fatalf("%s with hostPath %q and subPath %q is not sent to the webhook, but %s", k.gvk.Kind, path, sub, why)
		}
		for _, pv := range []*corev1.PersistentVolume{hostPathPV(path), localPV(path)} {
			if why, ok := protectedPV(pv); ok && !flt.sends(t, pvKind, pv) {
				t.Fatalf("PersistentVolume %+v is not sent to the webhook, but %s", pv.Spec.PersistentVolumeSource, why)
			}
		}
	})
}
