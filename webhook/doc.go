// Package webhook reviews Kubernetes objects that could mount a protected
// host named pipe.
//
// The decision is one typed call, Handler.Decide: a Request (the object
// and what is done to it) in, an Outcome (a policy.Verdict, rego's decision
// and the messages a user reads) or an error out. The webhook, the
// background audit (package controller, through package inventory) and
// `pipeguard policy eval` all call it. Handle, the controller-runtime
// admission.Handler, only translates an AdmissionReview to a Request and
// the Outcome to a response (handler.go). Decide (decide.go) reads the
// object with package decode, finds the pod spec inside any supported kind
// (or the host path of a PersistentVolume), turns every container ×
// volumeMount on a host path into a fact (policy.Mount, facts.go) with the
// path normalized by package pipepath, adds the namespace's labels, and
// lets the policy engine decide. Namespaces get a review of their own
// (namespace_guard.go): only users who may grant pipe access may change the
// labels that grant it. Neither Decide nor Handle ever answers "allowed"
// for a request it could not decide.
//
// Every input of a review is bounded (limits.go): an object above the
// host-path bounds is denied before any rule runs, facts stop when the
// review's context ends, log lines are cut to known sizes. Bound
// (serve.go) serves the admission.Webhook over HTTP within the rest: the
// size of a review, the reviews in flight and the deadline the API server
// names.
//
// Rules lists every rule that can deny a request, with the file that decides
// it and what it denies.
package webhook
