// Package render builds one overlay of the config/ kustomize tree into
// manifests, as `kubectl kustomize` does, with the pipeguard images set.
// It is the single place that turns config/ into objects: the Helm chart
// generator (hack/helmgen) and its tests read config/ through it, so the
// chart and the kustomize install cannot drift apart.
package render
