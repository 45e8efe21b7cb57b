package webhook

import "context"

// StaticNamespaces serves namespace labels from a map, for offline
// evaluation and tests. A namespace not in the map is unknown.
type StaticNamespaces map[string]map[string]string

// NamespaceLabels implements NamespaceLabels.
func (s StaticNamespaces) NamespaceLabels(_ context.Context, name string) (map[string]string, bool, error) {
	labels, ok := s[name]
	return labels, ok, nil
}
