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
//   - server: the wire side: the endpoints (one per API group version), the
//     pipe and socket names and their listeners (named pipes with an explicit
//     security descriptor on Windows, unix sockets elsewhere), one gRPC
//     server per endpoint, the interceptor chain, metrics and graceful
//     shutdown.
//   - identity: who is calling (peer credentials per connection, pod watch,
//     optional ServiceAccount token).
//   - guard: the per-request interceptor: identity, confinement, gate, audit.
//   - gate: the rego rules of package pipeguard.agent and admin policies.
//   - audit: the audit log writer and its readers (verify, query, summary).
//   - groups/<group>: the API servers; they convert each API version to one
//     internal call, validate and confine the request, and call the host.
//   - methods: the one table of the request fields of every API method that
//     carry paths (and how each is resolved) or name what a call acts on;
//     guard, groups and the audit record read it.
//   - confine: the path confinement rules.
//   - hostops/<group>: host operations behind one small interface per group.
//   - apierr: the error shape.
package agent
