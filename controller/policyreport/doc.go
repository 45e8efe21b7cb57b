// Package policyreport writes the background audit's violations as policy
// reports, in the two APIs that Kyverno, Policy Reporter and other tools
// read:
//
//   - wgpolicyk8s.io/v1alpha2 ([WGPolicy]), the Kubernetes Policy Working
//     Group's PolicyReport and ClusterPolicyReport;
//   - openreports.io/v1alpha1 ([OpenReports]), Report and ClusterReport,
//     to which Kyverno 1.15 and Policy Reporter moved.
//
// A pass writes to every one of the two that the API server serves, the
// same results in each.
//
// # Objects
//
// Each pass of the audit leaves, for the violations it found, in each API:
//
//   - one PolicyReport (Report) named [ReportName] ("pipeguard") in every
//     namespace that holds at least one violating object;
//   - one ClusterPolicyReport (ClusterReport) named [ReportName] for
//     violating cluster-scoped objects (PersistentVolumes).
//
// Each carries the label app.kubernetes.io/managed-by=pipeguard; an
// openreports.io report also says source: pipeguard at its top. Reports
// with that label are pipeguard's: a report whose namespace has no
// violation any more is deleted, found by the label across namespaces, in
// each API, and so is the cluster report once no cluster-scoped object
// violates. Only violations are reported: an object that admission would admit
// without a message has no result (no "pass" results), so a report lists
// what needs attention and its size follows the violations, not the
// cluster.
//
// # Results
//
// One result per violation and policy:
//
//	source:    pipeguard
//	policy:    the PipeAccessPolicy's name, or pipeguard-default for the
//	           built-in default and for admin rules that name no policy
//	rule:      the rule id, e.g. protected-pipe-mount; evaluation-error
//	           for an object that could not be evaluated
//	result:    fail for deny, warn for warn and dryrun, error for an
//	           object that could not be evaluated
//	severity:  high
//	category:  Pipe access
//	message:   the rule's message (what mounts what, why it is not allowed,
//	           how to allow it)
//	resources: the violating object (apiVersion, kind, namespace, name, uid)
//	properties: container, pipe, action (deny, warn, dryrun or error)
//	timestamp: when the audit first found this violation
//
// Result mapping: "fail" means that admission would reject the object if
// it were created now, so the fail count is what breaks on the next
// rollout or re-creation. A policy in warn or dryrun admits the object:
// the object violates the policy, so "pass" would hide it, and "skip"
// would say the policy did not apply, but nothing is refused, so both are
// "warn"; the action property tells the two apart. "error" means that the
// object could not be evaluated: a policy's admin rules ran out of time or
// raised an error on it (the message says which policy and what failed),
// so admission would reject it too, failing closed; the audit goes on
// with the other objects. Severity is high for
// every result: a container that reaches a protected pipe can act as the
// node's administrator, whatever the policy's enforcement action.
//
// # Writes
//
// A report is written only when its content changed: a result keeps the
// timestamp of the report already stored for the same violation (the
// earlier one where both APIs hold it, so that both say the same), so a
// pass that finds the same violations issues no write. Reports are created
// and updated with optimistic concurrency; labels and annotations that others
// add are kept.
//
// # Size
//
// The bounds are the same in both APIs. A report lists at most
// [MaxResults] results and at most [MaxResultBytes] of encoded results,
// and each message is cut at [MaxMessageLength], so the API server never
// refuses a report for its size. The summary counts
// every violation found, listed or not; the annotation
// pipeguard.io/omitted-results says how many results were left out.
//
// # When the CRDs are missing
//
// The Writer asks the API server's discovery on each pass, for each API,
// whether it serves both kinds (one small request per group; the
// discovery of a group needs no RBAC). An API that it does not serve, or
// whose reports pipeguard may not list, is left out of the pass: the
// Writer says so once in its log, for that group, each time that changes,
// and writes the other. With neither, the pass writes nothing and does
// not fail. The CRDs and the RBAC come from config/policyreport
// (wgpolicyk8s.io) and config/policyreport/openreports (openreports.io),
// or the RBAC alone, for both groups, from config/policyreport/rbac where
// Kyverno or Policy Reporter installed the CRDs.
package policyreport
