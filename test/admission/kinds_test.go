package admission_test

import (
	"strings"
	"testing"

	"github.com/pipeguard/pipeguard/internal/kinds"
)

// TestEveryReviewedKindIsChecked: the prefilter tests build an object of
// every kind of internal/kinds, and of no other.
func TestEveryReviewedKindIsChecked(t *testing.T) {
	mustKinds(t)
	built := map[string]bool{pvKind.gvk.String(): true}
	for _, k := range podKinds {
		built[k.gvk.String()] = true
		spec := mountSpec(`\\.\pipe\csi-proxy-disk-v1`, "", false, inContainer)
		got, err := podSpecOf(k, k.wrap(spec))
		if err != nil || len(got.Volumes) != 2 || got.Volumes[1].HostPath.Path != `\\.\pipe\csi-proxy-disk-v1` {
			t.Errorf("%s: the pod spec read back from the object built around one is %+v (%v)", k.gvk.Kind, got, err)
		}
	}
	all := kinds.All()
	for _, k := range all {
		if !built[k.GVK.String()] {
			t.Errorf("%s is reviewed, but the prefilter tests build no object of it", k.GVK)
		}
	}
	if len(built) != len(all) {
		t.Errorf("the prefilter tests build %d kinds, the table holds %d", len(built), len(all))
	}
}

// TestAKindTheTestsCannotBuildFails: a kind of the table with a layout the
// tests do not know, or a second PersistentVolume-like kind, is an error
// naming it, never a kind left out.
func TestAKindTheTestsCannotBuildFails(t *testing.T) {
	table := kinds.All()
	withLayout := func(kind string, l kinds.Layout) []kinds.Kind {
		out := kinds.All()
		for i := range out {
			if out[i].GVK.Kind == kind {
				out[i].Layout = l
			}
		}
		return out
	}
	noPV := func() []kinds.Kind {
		var out []kinds.Kind
		for _, k := range table {
			if k.Layout != kinds.LayoutPersistentVolume {
				out = append(out, k)
			}
		}
		return out
	}
	tests := map[string]struct {
		table []kinds.Kind
		want  string // "" for no error
	}{
		"the table":             {table: table},
		"a layout unknown here": {table: withLayout("DaemonSet", 99), want: "internal/kinds: apps/v1, Kind=DaemonSet has layout 99, which these tests cannot build: add where its pod spec sits to podSpecPaths"},
		"a second PersistentVolume layout": {table: withLayout("PodTemplate", kinds.LayoutPersistentVolume),
			want: "internal/kinds: /v1, Kind=PodTemplate has the PersistentVolume layout, but these tests build one kind of it, the core PersistentVolume: teach them PodTemplate"},
		"no PersistentVolume": {table: noPV(), want: "internal/kinds: no kind has the PersistentVolume layout: these tests expect PersistentVolume among the reviewed kinds"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			pods, pv, err := reviewedKinds(tc.table)
			if tc.want == "" {
				if err != nil || len(pods)+1 != len(tc.table) {
					t.Fatalf("%d pod kinds, PersistentVolume %s, error %v; want every kind of the table and no error", len(pods), pv.gvk, err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want %q", err, tc.want)
			}
		})
	}
}
