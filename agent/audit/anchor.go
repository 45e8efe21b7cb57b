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
	// DefaultAnchorNamespace is where the agent and its anchors live: the
	// namespace of config/agent.
	DefaultAnchorNamespace = "pipeguard-agent"
)

// Keys of the agent's options that make it publish its anchor, the
// cluster it reaches and its node's name, which become the publisher's
// anchor.Options.Client and Node: messages that tell how to get an anchor
// name them (see package option).
const (
	OptionAnchorCluster = "audit.anchor.cluster"
	OptionAnchorNode    = "audit.anchor.node"
)

// OptionWebhookBatchMaxBytes is the key of WebhookOptions.BatchMaxBytes,
// which the readers of the webhook's lists name (see package option).
const OptionWebhookBatchMaxBytes = "audit.webhook-batch-max-bytes"

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

// String describes the anchor in messages.
func (a Anchor) String() string {
	s := fmt.Sprintf("anchor of node %s: record seq %d hashing to %s in %s, published %s", a.Node, a.Seq, a.Hash.Short(), a.File, a.Time.UTC().Format(time.RFC3339))
	if r := a.Reset; r != nil {
		s += fmt.Sprintf(", reset by %s (reason: %q) and anchored again from record seq %d", r.Who(), r.Reason, r.AtSeq)
	}
	return s
}

// Who names the person who reset the anchor, or "an unknown user" when
// the reset does not say.
func (r AnchorResetRecord) Who() string {
	if r.By == "" {
		return "an unknown user"
	}
	return r.By
}
