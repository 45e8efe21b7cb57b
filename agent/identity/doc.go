// Package identity tells pipeguard-agent who is calling.
//
// Peer identity is captured once per connection, by transport credentials
// that run when the connection is accepted, and is reachable from every
// handler through the gRPC peer (FromContext):
//
//   - Linux: SO_PEERCRED (pid, uid, gid), the process start time (so a
//     reused pid is not mistaken for the caller), and /proc/PID/cgroup mapped
//     to the container id and pod UID. When the kernel offers SO_PEERPIDFD the
//     process is pinned while /proc is read.
//   - Windows: GetNamedPipeClientProcessId, a process handle held for the
//     connection's life (so the pid cannot be reused while it is open), the
//     process creation time, and the user SID of the client's impersonation
//     token or, for clients that dial at anonymous impersonation level, of its
//     process token, with a note saying which.
//
// Caller.Attribution classes every caller as in a pod, on the host, or
// unattributed. Only a platform that maps processes to pods makes a caller
// without one the host, and only from a cgroup path rooted where a host
// path is: a path that climbs out of the agent's cgroup namespace ("/../..")
// or that the kernel would not write leaves the caller unattributed, so that
// no rule waives a check for it.
//
// A caller the platform did not map to a pod (every Windows caller) is
// mapped through the node's CRI runtime (CRIResolver, WithCRI): the caller or
// its nearest ancestor that is a container's process names the container and
// its sandbox the pod. Unresolved callers keep empty pod fields and a note.
//
// Existing CSI drivers send nothing more, so peer identity stands on its own.
// A driver may add a projected ServiceAccount token (WithServiceAccountToken);
// TokenVerifier checks it with a TokenReview and against the peer's pod and
// this node. PodIndex fills in pod name, namespace and ServiceAccount from the
// pod UID through a node-scoped pod watch; what it cannot resolve stays empty.
package identity
