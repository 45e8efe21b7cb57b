package webhook

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// StaticNamespaces serves namespace labels from a map, for offline
// evaluation and tests. A namespace not in the map is unknown.
type StaticNamespaces map[string]map[string]string

// NamespaceLabels implements NamespaceLabels.
func (s StaticNamespaces) NamespaceLabels(_ context.Context, name string) (map[string]string, bool, error) {
	labels, ok := s[name]
	return labels, ok, nil
}

// CachedNamespaces reads namespace labels from a controller-runtime cache
// (an informer), never with a live GET per review. The cache holds
// namespace metadata only.
type CachedNamespaces struct {
	Reader client.Reader
}

// NamespaceLabels implements NamespaceLabels.
func (c CachedNamespaces) NamespaceLabels(ctx context.Context, name string) (map[string]string, bool, error) {
	ns := &metav1.PartialObjectMetadata{}
	ns.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("Namespace"))
	if err := c.Reader.Get(ctx, client.ObjectKey{Name: name}, ns); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, false, nil
		}
		return nil, false, err
	}
	return ns.Labels, true, nil
}
