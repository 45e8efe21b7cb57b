// Package agent holds the parts of pipeguard-agent, the node agent that serves the
// CSI Proxy gRPC API groups (disk, filesystem, smb, volume, system, iscsi) on the
// same named pipes as CSI Proxy, so existing CSI node plugins work unchanged,
// while every path it is handed is confined to the kubelet directory and the
// configured working directories, and every request is attributed to its
// caller, gated by rego rules and recorded in a hash-chained audit log.
//
// cmd/pipeguard-agent/app assembles them. The subpackages, from the wire
// inwards:
//
//   - listen: builds the pipe and socket names and opens the listeners
//     (named pipes with an explicit security descriptor on Windows, unix
//     sockets elsewhere).
//   - server: one gRPC server per API group version, the interceptor chain,
//     metrics and graceful shutdown.
//   - identity: who is calling (peer credentials per connection, pod watch,
//     optional ServiceAccount token).
//   - guard: the per-request interceptor: identity, confinement, gate, audit.
//   - gate: the rego rules of package pipeguard.agent and admin policies.
//   - audit: the audit log writer and its readers (verify, query, summary).
//   - groups/<group>: the API servers; they convert each API version to one
//     internal call, validate and confine the request, and call the host.
//   - confine: the path confinement rules.
//   - hostops/<group>: host operations behind one small interface per group.
//   - apierr, endpoint: the error shape and the description of a served pipe.
package agent
