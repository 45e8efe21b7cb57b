package confine

import (
	"context"

	"github.com/pipeguard/pipeguard/agent/identity"
)

// PeerCaller is whom a request is attributed to by its peer identity, for
// rule pod-link: its pod, the host (a platform that maps processes to pods
// found none), or unattributed (identity.Unattributed: a cgroup outside
// the agent's cgroup namespace, say). The pod is the one the connection's
// process runs in, never one a token names. A connection without identity,
// in an agent assembled without the guard, is CallerUnidentified; the
// guard refuses such a connection's requests before they get here. A
// caller WithCaller put in ctx comes first.
func PeerCaller(ctx context.Context) Caller {
	if c, ok := ctx.Value(callerKey{}).(Caller); ok {
		return c
	}
	c, ok := identity.FromContext(ctx)
	if !ok {
		return Caller{Kind: CallerUnidentified}
	}
	switch c.Attribution() {
	case identity.AttributedPod:
		return Caller{Kind: CallerInPod, Pod: c.PodUID}
	case identity.AttributedHost:
		return Caller{Kind: CallerOnHost}
	}
	return Caller{Kind: CallerUnattributed}
}

// ShareKey names whom a request's host calls count against when slots and
// workers are shared between callers: "pod:" and the pod UID of a caller
// attributed to a pod, else its attribution and user (the verified token's
// username, the peer's SID or UID), so that a process cannot get a share of
// its own by starting another. A context without peer identity, a call the
// agent makes itself and not a request of the API (whose connections always
// carry one), has the key "".
func ShareKey(ctx context.Context) string {
	c, ok := identity.FromContext(ctx)
	if !ok || c == nil {
		return ""
	}
	if c.Attribution() == identity.AttributedPod {
		return "pod:" + c.PodUID
	}
	return c.Attribution() + ":" + c.Username()
}
