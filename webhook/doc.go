// Package webhook reviews Kubernetes objects that could mount a protected
// host named pipe.
//
// A Handler is a controller-runtime admission.Handler. The decision path is
// two files: handler.go takes the AdmissionRequest to a response, and
// facts.go takes the object to facts. The handler reads the object with
// package decode, finds the pod spec inside any supported kind (or the host
// path of a PersistentVolume), turns every container × volumeMount on a host
// path into a fact (policy.Mount) with the path normalized by package
// pipepath, adds the namespace's labels, and lets the policy engine decide.
// Namespaces get a review of their own (namespace_guard.go): only users who
// may grant pipe access may change the labels that grant it. The handler
// never answers "allowed" for a request it could not decide.
//
// Rules lists every rule that can deny a request, with the file that decides
// it and what it denies.
package webhook
