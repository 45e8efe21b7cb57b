// Package controller keeps the admission engine in step with the
// PipeAccessPolicies in the cluster. Its reconciler runs on every replica of
// pipeguard-webhook, since each answers reviews with the same policies:
// every change recompiles the whole set with package policy and puts it in
// force. Only the leader writes each policy's status (Ready condition,
// lastEnforced) and Warning events. Metrics tell which generation and which
// protection are in force.
//
// A policy in force may grant more than its spec seems to say: a selector
// that also matches unlabelled namespaces, a named namespace that does not
// exist yet, ServiceAccounts that narrow which pods get the allowance but
// not who. Its Ready message starts with a warning for each (warnings.go).
// Those about namespaces and ServiceAccounts can change with no policy
// changing, so the leader rewrites them, without recompiling, whenever a
// namespace is created or deleted and, while a named ServiceAccount is
// missing, every recheck interval (refresh.go).
//
// The leader also audits what already runs (Auditor): every Pod, workload
// and PersistentVolume, read from caches stripped to what the admission
// facts need, is decided on as admission would on its creation, and the
// violations go to each policy's status, metrics and Warning events.
//
// What it writes into objects fits the API server's limits (package
// limits): a text too long keeps what fits and says how much it left out,
// so that no write is refused for its length. EventWriter records Events
// itself, so that one the API server refuses anyway is counted and logged.
package controller
