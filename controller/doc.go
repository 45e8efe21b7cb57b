// Package controller keeps the admission engine in step with the
// PipeAccessPolicies in the cluster. Its reconciler runs on every replica of
// pipeguard-webhook, since each answers reviews with the same policies:
// every change recompiles the whole set with package policy and puts it in
// force. Only the leader writes each policy's status (Ready condition,
// lastEnforced) and Warning events. Metrics tell which generation and which
// protection are in force.
package controller
