// Package guard is the per-request gate of pipeguard-agent: one gRPC
// interceptor that, for every call,
//
//	identifies the caller (peer identity from the connection, pod from the
//	pod watch, optional ServiceAccount token) ─▶ confines every path field
//	─▶ asks the rego gate ─▶ writes the audit record (write-ahead and
//	fsynced for calls that change the host) ─▶ runs the handler ─▶ records
//	the completion
//
// and, to a client that asks for it with the "pipeguard-audit-id-request"
// request metadata (AuditIDRequestHeader, any value, any letter case),
// returns the record's audit ID in the "audit-id" response header
// (AuditIDHeader), on an answer and on a refusal alike. Clients that do
// not ask, the csi-proxy client libraries among them, get no extra header;
// every audit ID is in the audit log either way.
//
// Every failure to identify, confine, decide or record denies the request,
// except audit failures under FailAllow, which are logged loudly and
// counted.
//
// A request refused after the gate, by its handler (an apierr.Refusal: a
// symlink escape found when the path is resolved, a malformed input, a
// service not allowed), is a denial too: its completion record says deny
// (authorization.k8s.io/decision forbid) with the rule and reason, and it
// is counted as denied by that rule, just like a request the guard
// refused. A host operation that ran and failed is recorded as allowed,
// with its gRPC code: it was authorized, and failed.
//
// What a call costs beyond its handler is kept small: the record's user
// block is encoded once per connection, and again only when the caller's
// details change (a pod found, a token verified); the request is rendered
// in full only when the gate's policies can deny or the audit level is
// Request, and otherwise only its path and name fields are read; audit
// IDs take no system randomness per call (audit.IDs); and the records of
// concurrent calls share their write (audit.Log.Append).
package guard
