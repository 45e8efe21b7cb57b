package audit

import (
	"fmt"
	"strconv"
	"time"
)

// An anchor is the head of a node's chain kept outside the node: a
// coordination.k8s.io/v1 Lease named AnchorLeasePrefix+node in the agent's
// namespace, its fields in annotations. A Lease needs no CRD, is built for
// one small object per node updated every few seconds, and is what
// kube-apiserver's own node heartbeats use. The API server, not the node,
// guards it: a ValidatingAdmissionPolicy (config/agent/anchor-policy.yaml)
// lets only the agent whose ServiceAccount token is bound to a pod on that
// node write it, and never lets its sequence number go backwards.
const (
	AnchorLeasePrefix     = "pipeguard-audit-"
	AnchorNode            = "audit.pipeguard.io/node"
	AnchorSeq             = "audit.pipeguard.io/seq"
	AnchorHash            = "audit.pipeguard.io/hash"
	AnchorFile            = "audit.pipeguard.io/file"
	AnchorTime            = "audit.pipeguard.io/time"
	AnchorAgentStart      = "audit.pipeguard.io/agent-start"
	DefaultAnchorInterval = 10 * time.Second
)

// Anchor is a chain head published outside the node.
type Anchor struct {
	Node string
	Head
	// Time is when it was published; AgentStart when the agent that
	// published it started.
	Time, AgentStart time.Time
}

// AnchorLeaseName is the name of the Lease that anchors node's chain.
func AnchorLeaseName(node string) string { return AnchorLeasePrefix + node }

// Annotations encodes the anchor for its Lease.
func (a Anchor) Annotations() map[string]string {
	return map[string]string{
		AnchorNode:       a.Node,
		AnchorSeq:        strconv.FormatUint(a.Seq, 10),
		AnchorHash:       a.Hash.String(),
		AnchorFile:       a.File,
		AnchorTime:       a.Time.UTC().Format(time.RFC3339Nano),
		AnchorAgentStart: a.AgentStart.UTC().Format(time.RFC3339Nano),
	}
}

// ParseAnchor decodes the annotations of the anchor Lease of node; where
// names the object in messages.
func ParseAnchor(node, where string, ann map[string]string) (*Anchor, error) {
	a := &Anchor{Node: node}
	if got := ann[AnchorNode]; got != node {
		return nil, fmt.Errorf("%s: annotation %s is %q, not node %q: the anchor belongs to another node", where, AnchorNode, got, node)
	}
	seq, err := strconv.ParseUint(ann[AnchorSeq], 10, 64)
	if err != nil || seq == 0 {
		return nil, fmt.Errorf("%s: annotation %s %q is not a positive integer", where, AnchorSeq, ann[AnchorSeq])
	}
	a.Seq = seq
	if a.Hash, err = ParseHash(ann[AnchorHash]); err != nil {
		return nil, fmt.Errorf("%s: annotation %s: %w", where, AnchorHash, err)
	}
	a.File = ann[AnchorFile]
	if a.Time, err = time.Parse(time.RFC3339Nano, ann[AnchorTime]); err != nil {
		return nil, fmt.Errorf("%s: annotation %s %q is not an RFC 3339 time", where, AnchorTime, ann[AnchorTime])
	}
	if a.AgentStart, err = time.Parse(time.RFC3339Nano, ann[AnchorAgentStart]); err != nil {
		return nil, fmt.Errorf("%s: annotation %s %q is not an RFC 3339 time", where, AnchorAgentStart, ann[AnchorAgentStart])
	}
	return a, nil
}

func (a Anchor) String() string {
	return fmt.Sprintf("anchor of node %s: record seq %d hashing to %s in %s, published %s", a.Node, a.Seq, short(a.Hash), a.File, a.Time.UTC().Format(time.RFC3339))
}
