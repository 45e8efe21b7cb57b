package inventory

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/pipeguard/pipeguard/webhook"
)

// Lister lists objects; a cache reader and a client are ones.
type Lister interface {
	List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error
}

// ClaimsFrom returns the host path PersistentVolume each
// PersistentVolumeClaim src holds is bound to (its spec.volumeName), for
// the Claims of a webhook.Handler: a pod that mounts such a claim mounts
// that path. Claims bound to no PersistentVolume with a host path are left
// out.
func ClaimsFrom(ctx context.Context, src Lister) (webhook.StaticClaims, error) {
	var pvs corev1.PersistentVolumeList
	if err := src.List(ctx, &pvs); err != nil {
		return nil, fmt.Errorf("inventory: listing persistentvolumes: %w", err)
	}
	paths := make(map[string]webhook.BoundVolume, len(pvs.Items))
	for i := range pvs.Items {
		if v, ok := boundVolume(&pvs.Items[i]); ok {
			paths[v.Name] = v
		}
	}
	var pvcs corev1.PersistentVolumeClaimList
	if err := src.List(ctx, &pvcs); err != nil {
		return nil, fmt.Errorf("inventory: listing persistentvolumeclaims: %w", err)
	}
	out := webhook.StaticClaims{}
	for _, c := range pvcs.Items {
		if v, ok := paths[c.Spec.VolumeName]; ok && c.Spec.VolumeName != "" {
			out[c.Namespace+"/"+c.Name] = v
		}
	}
	return out, nil
}

// boundVolume is the host path of pv, if it has one.
func boundVolume(pv *corev1.PersistentVolume) (webhook.BoundVolume, bool) {
	switch {
	case pv.Spec.HostPath != nil:
		return webhook.BoundVolume{Name: pv.Name, Source: "hostPath", Path: pv.Spec.HostPath.Path}, true
	case pv.Spec.Local != nil:
		return webhook.BoundVolume{Name: pv.Name, Source: "local", Path: pv.Spec.Local.Path}, true
	}
	return webhook.BoundVolume{}, false
}
