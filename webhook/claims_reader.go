package webhook

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// ReaderClaims finds a claim's PersistentVolume through Reader, one GET of
// the claim and one of its PersistentVolume, so that a replica keeps no
// copy of every claim in the cluster: pods reach the webhook for their
// claims only while a protected PersistentVolume exists
// (config/webhook, claims.pipeguard.io).
type ReaderClaims struct {
	Reader client.Reader
}

// BoundVolume implements Claims.
func (r ReaderClaims) BoundVolume(ctx context.Context, namespace, claim string) (*BoundVolume, error) {
	var pvc corev1.PersistentVolumeClaim
	switch err := r.Reader.Get(ctx, client.ObjectKey{Namespace: namespace, Name: claim}, &pvc); {
	case apierrors.IsNotFound(err):
		return nil, nil
	case err != nil:
		return nil, err
	case pvc.Spec.VolumeName == "":
		return nil, nil
	}
	var pv corev1.PersistentVolume
	switch err := r.Reader.Get(ctx, client.ObjectKey{Name: pvc.Spec.VolumeName}, &pv); {
	case apierrors.IsNotFound(err):
		return nil, nil
	case err != nil:
		return nil, err
	}
	switch {
	case pv.Spec.HostPath != nil:
		return &BoundVolume{Name: pv.Name, Source: "hostPath", Path: pv.Spec.HostPath.Path}, nil
	case pv.Spec.Local != nil:
		return &BoundVolume{Name: pv.Name, Source: "local", Path: pv.Spec.Local.Path}, nil
	}
	return nil, nil
}
