package audit

import (
	"errors"
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
//
// A person granted the verb reset on auditanchors.audit.pipeguard.io may
// reset an anchor the agent can no longer advance: they set AnchorReset
// and AnchorResetBy and drop AnchorResetAtSeq; the agent's next anchor
// starts from its own head and sets AnchorResetAtSeq to it. The three stay
// on the Lease, so verification reports the reset.
const (
	AnchorLeasePrefix     = "pipeguard-audit-"
	AnchorNode            = "audit.pipeguard.io/node"
	AnchorSeq             = "audit.pipeguard.io/seq"
	AnchorHash            = "audit.pipeguard.io/hash"
	AnchorFile            = "audit.pipeguard.io/file"
	AnchorTime            = "audit.pipeguard.io/time"
	AnchorAgentStart      = "audit.pipeguard.io/agent-start"
	AnchorReset           = "audit.pipeguard.io/reset"
	AnchorResetBy         = "audit.pipeguard.io/reset-by"
	AnchorResetAtSeq      = "audit.pipeguard.io/reset-at-seq"
	DefaultAnchorInterval = 10 * time.Second
)

// Anchor is a chain head published outside the node.
type Anchor struct {
	Node string
	Head
	// Time is when it was published; AgentStart when the agent that
	// published it started.
	Time, AgentStart time.Time
	// Reset is the last reset of the anchor, nil if it was never reset.
	Reset *AnchorResetRecord
}

// AnchorResetRecord is what a reset leaves on the anchor.
type AnchorResetRecord struct {
	By, Reason string
	// AtSeq is the first seq the agent anchored after the reset: records up
	// to it were anchored only after the reset.
	AtSeq uint64
}

// ErrAnchorResetPending means an anchor was reset and its agent has not
// anchored since: there is no head to verify against yet.
var ErrAnchorResetPending = errors.New("audit anchor reset and not anchored since")

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
// names the object in messages. An anchor reset and not anchored since is
// an error wrapping ErrAnchorResetPending.
func ParseAnchor(node, where string, ann map[string]string) (*Anchor, error) {
	a := &Anchor{Node: node}
	_, reset := ann[AnchorReset]
	atSeq, anchoredSince := ann[AnchorResetAtSeq]
	if reset && !anchoredSince {
		return nil, fmt.Errorf("%s: %w: %s reset it (reason: %q) and the agent on node %s has not anchored since, so the end of its log cannot be verified yet; verify again once the agent has published its head (every publication interval while it writes records; restarting the agent publishes at once)",
			where, ErrAnchorResetPending, orUnknown(ann[AnchorResetBy]), ann[AnchorReset], node)
	}
	if reset || anchoredSince {
		a.Reset = &AnchorResetRecord{By: ann[AnchorResetBy], Reason: ann[AnchorReset]}
		var err error
		if a.Reset.AtSeq, err = strconv.ParseUint(atSeq, 10, 64); err != nil || a.Reset.AtSeq == 0 {
			return nil, fmt.Errorf("%s: annotation %s %q is not a positive integer", where, AnchorResetAtSeq, atSeq)
		}
	}
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
	s := fmt.Sprintf("anchor of node %s: record seq %d hashing to %s in %s, published %s", a.Node, a.Seq, short(a.Hash), a.File, a.Time.UTC().Format(time.RFC3339))
	if r := a.Reset; r != nil {
		s += fmt.Sprintf(", reset by %s (reason: %q) and anchored again from record seq %d", orUnknown(r.By), r.Reason, r.AtSeq)
	}
	return s
}

func orUnknown(user string) string {
	if user == "" {
		return "an unknown user"
	}
	return user
}
