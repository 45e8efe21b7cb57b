// Package helm tests the Helm chart charts/pipeguard through Helm's Go SDK:
// it lints, renders with every toggle against the kustomize overlays of
// config/ it is generated from, refuses bad values with clear errors, and
// installs on a real kube-apiserver.
package helm
