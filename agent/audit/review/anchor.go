package review

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/pipeguard/pipeguard/agent/audit"
	"github.com/pipeguard/pipeguard/internal/option"
)

// ReadAnchor returns the anchor of node from its Lease in namespace
// (empty: audit.DefaultAnchorNamespace). A missing Lease is an error:
// verifying against an anchor that is not there must not pass as an
// unanchored verification.
func ReadAnchor(ctx context.Context, c kubernetes.Interface, namespace, node string) (*audit.Anchor, error) {
	if namespace == "" {
		namespace = audit.DefaultAnchorNamespace
	}
	name := audit.AnchorLeaseName(node)
	where := "Lease " + namespace + "/" + name
	l, err := c.CoordinationV1().Leases(namespace).Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, option.Errorf("no audit anchor for node %q: %s does not exist; the agent on that node publishes it when it runs with %s and %s", node, where,
			option.Name{Key: audit.OptionAnchorCluster, Field: "anchor.Options.Client"}, option.Name{Key: audit.OptionAnchorNode, Field: "anchor.Options.Node"})
	}
	if err != nil {
		return nil, fmt.Errorf("reading the audit anchor of node %q (%s): %w", node, where, err)
	}
	return ParseAnchor(node, where, l.Annotations)
}

// ReadAnchorKubeconfig reads the anchor of node with the credentials of a
// kubeconfig file.
func ReadAnchorKubeconfig(ctx context.Context, kubeconfig, namespace, node string) (*audit.Anchor, error) {
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return nil, fmt.Errorf("kubeconfig %s: %w", kubeconfig, err)
	}
	c, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("kubeconfig %s: %w", kubeconfig, err)
	}
	return ReadAnchor(ctx, c, namespace, node)
}

// ErrAnchorResetPending means an anchor was reset and its agent has not
// anchored since: there is no head to verify against yet.
var ErrAnchorResetPending = errors.New("audit anchor reset and not anchored since")

// ParseAnchor decodes the annotations of the anchor Lease of node; where
// names the object in messages. An anchor reset and not anchored since is
// an error wrapping ErrAnchorResetPending.
func ParseAnchor(node, where string, ann map[string]string) (*audit.Anchor, error) {
	a := &audit.Anchor{Node: node}
	_, reset := ann[audit.AnchorReset]
	atSeq, anchoredSince := ann[audit.AnchorResetAtSeq]
	if reset && !anchoredSince {
		return nil, fmt.Errorf("%s: %w: %s reset it (reason: %q) and the agent on node %s has not anchored since, so the end of its log cannot be verified yet; verify again once the agent has published its head (every publication interval while it writes records; restarting the agent publishes at once)",
			where, ErrAnchorResetPending, audit.AnchorResetRecord{By: ann[audit.AnchorResetBy]}.Who(), ann[audit.AnchorReset], node)
	}
	if reset || anchoredSince {
		a.Reset = &audit.AnchorResetRecord{By: ann[audit.AnchorResetBy], Reason: ann[audit.AnchorReset]}
		var err error
		if a.Reset.AtSeq, err = strconv.ParseUint(atSeq, 10, 64); err != nil || a.Reset.AtSeq == 0 {
			return nil, fmt.Errorf("%s: annotation %s %q is not a positive integer", where, audit.AnchorResetAtSeq, atSeq)
		}
	}
	if got := ann[audit.AnchorNode]; got != node {
		return nil, fmt.Errorf("%s: annotation %s is %q, not node %q: the anchor belongs to another node", where, audit.AnchorNode, got, node)
	}
	seq, err := strconv.ParseUint(ann[audit.AnchorSeq], 10, 64)
	if err != nil || seq == 0 {
		return nil, fmt.Errorf("%s: annotation %s %q is not a positive integer", where, audit.AnchorSeq, ann[audit.AnchorSeq])
	}
	a.Seq = seq
	if a.Hash, err = audit.ParseHash(ann[audit.AnchorHash]); err != nil {
		return nil, fmt.Errorf("%s: annotation %s: %w", where, audit.AnchorHash, err)
	}
	a.File = ann[audit.AnchorFile]
	if a.Time, err = time.Parse(time.RFC3339Nano, ann[audit.AnchorTime]); err != nil {
		return nil, fmt.Errorf("%s: annotation %s %q is not an RFC 3339 time", where, audit.AnchorTime, ann[audit.AnchorTime])
	}
	if a.AgentStart, err = time.Parse(time.RFC3339Nano, ann[audit.AnchorAgentStart]); err != nil {
		return nil, fmt.Errorf("%s: annotation %s %q is not an RFC 3339 time", where, audit.AnchorAgentStart, ann[audit.AnchorAgentStart])
	}
	return a, nil
}
