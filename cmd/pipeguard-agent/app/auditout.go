package app

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/client-go/kubernetes"

	"github.com/pipeguard/pipeguard/agent/audit"
	"github.com/pipeguard/pipeguard/agent/audit/anchor"
	"github.com/pipeguard/pipeguard/agent/gate"
	"github.com/pipeguard/pipeguard/agent/guard"
)

// AnchorConfig configures the audit anchor: the head of this node's audit
// chain, kept in a Lease in the cluster so that verification finds a log
// cut or rewritten on the node.
type AnchorConfig struct {
	// Namespace of the anchor Leases; empty: anchor.DefaultNamespace.
	Namespace string
	// Interval between publications; 0: audit.DefaultAnchorInterval.
	Interval time.Duration
}

// auditOutputs is what carries the audit log off the node: the anchor
// publisher (with a kubeconfig) and the webhook backend (with a webhook
// config file). Either may be nil.
type auditOutputs struct {
	anchor  *anchor.Publisher
	webhook *audit.Webhook
}

// newAuditOutputs builds them and hooks them into ao before the log opens;
// head reads the opened log's head.
func newAuditOutputs(client kubernetes.Interface, c GuardConfig, log logr.Logger, ao *audit.Options, head func() (audit.Head, error)) (*auditOutputs, error) {
	out := &auditOutputs{}
	if client != nil {
		p, err := anchor.New(anchor.Options{
			Client: client, Namespace: c.AuditAnchor.Namespace, Node: c.NodeName, Interval: c.AuditAnchor.Interval,
			Head: head, Log: log.WithName("audit-anchor"),
		})
		if err != nil {
			return nil, &OptionError{Option: "Guard.NodeName", Err: err}
		}
		out.anchor, ao.OnHead = p, p.Kick
	}
	if c.AuditWebhook.ConfigFile != "" {
		wo := c.AuditWebhook
		wo.Log = log.WithName("audit-webhook")
		if wo.Block && c.AuditFailure == guard.FailAllow {
			// The guard would run a refused request unrecorded.
			return nil, &OptionError{Option: "Guard.AuditWebhook.Block", Err: errors.New("the webhook's blocking mode refuses requests, which needs Guard.AuditFailure deny")}
		}
		w, err := audit.NewWebhook(wo)
		if err != nil {
			return nil, &OptionError{Option: "Guard.AuditWebhook.ConfigFile", Err: err}
		}
		// Rotation keeps the files holding records the receiver has not
		// acknowledged, up to ao.MaxUnsentBytes.
		out.webhook, ao.OnRecord, ao.Unsent = w, w.Record, w
		if wo.Block {
			ao.Admit = func(ev *audit.Event, ahead int) error {
				if !holdsRequest(ev) {
					// Counted against its caller's share, never refused.
					w.Attribute(ev, ahead)
					return nil
				}
				return w.Admit(ev, ahead)
			}
		}
	}
	return out, nil
}

// Start registers their metrics and starts them in the background.
func (o *auditOutputs) Start(ctx context.Context, reg prometheus.Registerer) error {
	var cs []prometheus.Collector
	if o.anchor != nil {
		cs = append(cs, o.anchor.Collectors()...)
	}
	if o.webhook != nil {
		cs = append(cs, o.webhook.Collectors()...)
	}
	for _, c := range cs {
		if err := reg.Register(c); err != nil {
			return fmt.Errorf("registering audit output metrics: %w", err)
		}
	}
	if o.anchor != nil {
		o.anchor.Start(ctx)
	}
	if o.webhook != nil {
		o.webhook.Start()
	}
	return nil
}

// Stop ends the periodic anchor publication, before the log closes.
func (o *auditOutputs) Stop() {
	if o.anchor != nil {
		o.anchor.Stop()
	}
}

// holdsRequest reports whether a request waits on this record, so that
// the webhook's blocking mode may refuse it: its write-ahead record, or
// the one record of a read. The completion of a host operation that ran,
// denials and checkpoints are never refused.
func holdsRequest(ev *audit.Event) bool {
	if ev.IsCheckpoint() || ev.Annotation(audit.AnnotationDecision) != audit.DecisionAllow {
		return false
	}
	return ev.Stage == audit.StageRequestReceived || !gate.Mutating(ev.Verb)
}

// Final runs once the log is closed: it sends the records still queued,
// the stop checkpoint among them, within audit.WebhookShutdownTimeout, and
// anchors the stop checkpoint, so that nothing can follow it unseen.
func (o *auditOutputs) Final(ctx context.Context) {
	if o.webhook != nil {
		o.webhook.Stop(ctx)
	}
	if o.anchor != nil {
		_ = o.anchor.Publish(ctx)
	}
}
