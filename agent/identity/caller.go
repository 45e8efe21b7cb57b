package identity

import (
	"context"
	"slices"
	"strconv"

	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/peer"
)

// Identity sources.
const (
	SourcePeer  = "peer"
	SourceToken = "token"
)

// Caller is who sent a request.
type Caller struct {
	// Source is SourcePeer, or SourceToken once a ServiceAccount token was
	// verified.
	Source string
	// PID is the calling process; 0 when unknown.
	PID int
	// ProcessStart is when the calling process started (RFC 3339), which
	// with PID names one process even when pids are reused.
	ProcessStart string
	// UID and GID are the caller's user and group (Linux); -1 when unknown.
	UID, GID int64
	// SID is the caller's user SID (Windows); SIDSource says which token it
	// came from: "client-token" or "process-token".
	SID, SIDSource string
	// ContainerID and Runtime name the caller's container, when it runs in
	// one; PodUID is its pod.
	ContainerID, Runtime, PodUID string
	// PodMapped says the platform maps processes to pods, so an empty
	// PodUID means "not in a pod" rather than "unknown".
	PodMapped bool
	// Unattributed says why a platform that maps processes to pods placed
	// this caller nowhere (on Linux, a cgroup path outside the agent's
	// cgroup namespace); PodUID is empty while it is set. Such a caller is
	// never taken for the host.
	Unattributed string
	// PodName, Namespace and ServiceAccount come from the pod watch or a
	// verified token; empty when unresolved.
	PodName, Namespace, ServiceAccount string
	// TokenUser is the username of a verified ServiceAccount token.
	TokenUser string
	// Notes say honestly what could not be established.
	Notes []string
}

// Attributions of a caller (Caller.Attribution).
const (
	// AttributedPod: the caller runs in pod PodUID.
	AttributedPod = "pod"
	// AttributedHost: the caller runs outside every pod, as its platform
	// proves.
	AttributedHost = "host"
	// Unattributed: neither is known; every rule treats the caller as it
	// treats the most restricted one.
	Unattributed = "unattributed"
)

// Attribution says where the caller runs: AttributedPod, AttributedHost or
// Unattributed. Rules that waive checks for the host ask this, not the
// fields it is made of, so that an unattributed caller never passes for
// the host.
func (c *Caller) Attribution() string {
	switch {
	case c.PodUID != "":
		return AttributedPod
	case c.PodMapped && c.Unattributed == "":
		return AttributedHost
	}
	return Unattributed
}

// placedByCRI clears Unattributed once the runtime named the caller's pod,
// which its cgroup path could not, and keeps why in the notes.
func (c *Caller) placedByCRI() {
	if c.PodUID == "" || c.Unattributed == "" {
		return
	}
	why := c.Unattributed
	c.Notes = slices.DeleteFunc(c.Notes, func(n string) bool { return n == why })
	c.Notes = append(c.Notes, "CRI: the runtime names the caller's pod; from the cgroup alone: "+why)
	c.Unattributed = ""
}

// Username is the audit username: the verified token's, else
// pipeguard:peer:sid:<SID> or pipeguard:peer:uid:<UID>.
func (c *Caller) Username() string {
	switch {
	case c.TokenUser != "":
		return c.TokenUser
	case c.SID != "":
		return "pipeguard:peer:sid:" + c.SID
	case c.UID >= 0:
		return "pipeguard:peer:uid:" + strconv.FormatInt(c.UID, 10)
	}
	return "pipeguard:peer:unknown"
}

// Clone returns a copy that can be enriched per request.
func (c *Caller) Clone() *Caller {
	out := *c
	out.Notes = append([]string(nil), c.Notes...)
	return &out
}

// AuthInfo carries the peer's Caller in the gRPC peer of every request on a
// connection.
type AuthInfo struct {
	credentials.CommonAuthInfo
	Caller *Caller
}

// AuthType implements credentials.AuthInfo.
func (AuthInfo) AuthType() string { return "pipeguard-peer" }

// ConnectionKey names the caller whose connections share one caller's
// place on an endpoint (server.MaxConnectionsPerCaller): its pod when the
// connection's peer names one (Linux, from the cgroup), else its process,
// else its user.
func (a AuthInfo) ConnectionKey() string {
	c := a.Caller
	switch {
	case c == nil:
		return "unknown"
	case c.PodUID != "":
		return "pod " + c.PodUID
	case c.PID > 0:
		return "process " + strconv.Itoa(c.PID) + " started " + c.ProcessStart
	case c.SID != "":
		return "user " + c.SID
	case c.UID >= 0:
		return "user " + strconv.FormatInt(c.UID, 10)
	}
	return "unknown"
}

// FromContext returns the peer identity of the connection a request came on.
func FromContext(ctx context.Context) (*Caller, bool) {
	p, ok := peer.FromContext(ctx)
	if !ok {
		return nil, false
	}
	ai, ok := p.AuthInfo.(AuthInfo)
	if !ok || ai.Caller == nil {
		return nil, false
	}
	return ai.Caller, true
}
