// Package webhook reviews Kubernetes objects that could mount a protected
// host named pipe.
//
// A Handler is a controller-runtime admission.Handler: it decodes the
// AdmissionRequest, finds the pod spec inside any supported kind (or the
// host path of a PersistentVolume), turns every container × volumeMount on a
// host path into a fact (policy.Mount) with the path normalized by
// webhook/pipepath, adds the namespace's labels, and lets the policy engine
// decide. It never answers "allowed" for a request it could not decide.
package webhook
