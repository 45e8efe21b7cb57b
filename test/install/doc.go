// Package install tests pipeguard's installation as cluster admins perform
// it: the kustomize tree in config/ rendered and applied with kubectl to a
// real kube-apiserver, and pipeguard-webhook, built from source, answering
// the API server. It has no code of its own, only tests.
package install
