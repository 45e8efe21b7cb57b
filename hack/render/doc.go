// Package render builds one overlay of the config/ kustomize tree into
// manifests, as `kubectl kustomize` does, with the pipeguard images set.
// It is the single place that turns config/ into objects: the Helm chart
// generator (hack/helmgen), `make render` (hack/kustomization) and the chart's
// tests (test/helm) read config/ through it, so the chart and the kustomize
// install cannot drift apart. It lives in hack/, beside the tools that use
// it: no pipeguard binary renders config/.
package render
