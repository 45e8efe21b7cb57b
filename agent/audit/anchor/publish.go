package anchor

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/pipeguard/pipeguard/agent/audit"
	"github.com/pipeguard/pipeguard/internal/option"
)

// DefaultNamespace is where the agent and its anchors live: the namespace
// of config/agent. Anchors sit beside the agent because the policy that
// guards them names the ServiceAccount of the namespace they are in.
const DefaultNamespace = audit.DefaultAnchorNamespace

// Keys of the options New's message names (see package option); it names
// them again as the agent sets them, by audit.OptionAnchorCluster and
// audit.OptionAnchorNode.
const (
	OptionClient = "anchor.client"
	OptionNode   = "anchor.node"
	OptionHead   = "anchor.head"
)

// Options configures a Publisher.
type Options struct {
	Client    kubernetes.Interface
	Namespace string // empty: DefaultNamespace
	Node      string
	// Head returns the chain head to publish; (*audit.Log).Head.
	Head func() (audit.Head, error)
	// Interval between publications; 0 means audit.DefaultAnchorInterval.
	Interval time.Duration
	// Timeout bounds one publication; 0 means 5 s.
	Timeout    time.Duration
	AgentStart time.Time
	Log        logr.Logger
	Now        func() time.Time
}

// Publisher keeps node's anchor Lease at the chain head: every Interval,
// whenever Kick is called (rotation, prune) and once more at Stop. It runs
// beside the request path and never blocks it: a failed publication is
// logged and counted, and the next one tries again.
type Publisher struct {
	o        Options
	kick     chan struct{}
	failures prometheus.Counter
	pubMu    sync.Mutex // one publication at a time
	last     uint64     // last sequence number published; pubMu
	mu       sync.Mutex
	done     chan struct{}
	cancel   context.CancelFunc
}

// New returns a publisher; Start starts it.
func New(o Options) (*Publisher, error) {
	if o.Client == nil || o.Node == "" || o.Head == nil {
		return nil, option.Errorf("audit anchor publisher: %s, %s and %s are required (the agent needs %s and %s)",
			option.Name{Key: OptionClient, Field: "Options.Client"}, option.Name{Key: OptionNode, Field: "Options.Node"}, option.Name{Key: OptionHead, Field: "Options.Head"},
			option.Name{Key: audit.OptionAnchorCluster, Field: "Options.Client"}, option.Name{Key: audit.OptionAnchorNode, Field: "Options.Node"})
	}
	if o.Namespace == "" {
		o.Namespace = DefaultNamespace
	}
	if o.Interval <= 0 {
		o.Interval = audit.DefaultAnchorInterval
	}
	if o.Timeout <= 0 {
		o.Timeout = 5 * time.Second
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.AgentStart.IsZero() {
		o.AgentStart = o.Now()
	}
	return &Publisher{
		o:    o,
		kick: make(chan struct{}, 1),
		failures: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "pipeguard_agent_audit_anchor_failures_total",
			Help: "Publications of the audit chain head to the cluster that failed.",
		}),
		done: make(chan struct{}),
	}, nil
}

// Collectors returns the publisher's metrics for registration.
func (p *Publisher) Collectors() []prometheus.Collector { return []prometheus.Collector{p.failures} }

// Kick asks for a publication soon; it never blocks. It fits
// audit.Options.OnHead.
func (p *Publisher) Kick() {
	select {
	case p.kick <- struct{}{}:
	default:
	}
}

// Start publishes in the background until ctx ends or Stop is called.
func (p *Publisher) Start(ctx context.Context) {
	ctx, cancel := context.WithCancel(ctx)
	p.mu.Lock()
	p.cancel = cancel
	p.mu.Unlock()
	go p.run(ctx)
}

func (p *Publisher) run(ctx context.Context) {
	defer close(p.done)
	t := time.NewTicker(p.o.Interval)
	defer t.Stop()
	for {
		_ = p.Publish(ctx)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		case <-p.kick:
		}
	}
}

// Stop ends the background publication and waits for it; the caller then closes the log and calls Publish once
// more, so that the anchor names the stop checkpoint.
func (p *Publisher) Stop() {
	p.mu.Lock()
	cancel := p.cancel
	p.mu.Unlock()
	if cancel != nil {
		cancel()
		<-p.done
	}
}

// Publish writes the current head to the anchor Lease, unless it was
// published already. Failures are logged, counted and returned.
func (p *Publisher) Publish(ctx context.Context) error {
	err := p.publish(ctx)
	if err != nil {
		p.failures.Inc()
		p.o.Log.Error(err, "publishing the audit chain head to the cluster failed; verification against the anchor sees only the last published head", "node", p.o.Node, "lease", p.o.Namespace+"/"+audit.AnchorLeaseName(p.o.Node))
	}
	return err
}

func (p *Publisher) publish(ctx context.Context) error {
	p.pubMu.Lock()
	defer p.pubMu.Unlock()
	h, err := p.o.Head()
	if err != nil {
		return fmt.Errorf("reading the audit chain head: %w", err)
	}
	if h.Seq == p.last {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), p.o.Timeout)
	defer cancel()
	a := audit.Anchor{Node: p.o.Node, Head: h, Time: p.o.Now(), AgentStart: p.o.AgentStart}
	reset, err := write(ctx, p.o.Client, p.o.Namespace, a)
	if err != nil {
		return err
	}
	if reset != nil {
		p.o.Log.Info("anchored the audit chain head again after a reset of the anchor; verification reports the reset", "node", p.o.Node,
			"lease", p.o.Namespace+"/"+audit.AnchorLeaseName(p.o.Node), "resetBy", reset.By, "reason", reset.Reason, "seq", reset.AtSeq)
	}
	p.last = h.Seq
	return nil
}

// Write creates or updates the anchor Lease of a.Node to a. After a reset
// (docs/audit.md) the first write records its seq in
// audit.AnchorResetAtSeq, as the anchor policy requires.
func Write(ctx context.Context, c kubernetes.Interface, namespace string, a audit.Anchor) error {
	_, err := write(ctx, c, namespace, a)
	return err
}

// write is Write; it returns the reset it anchored after, if it did.
func write(ctx context.Context, c kubernetes.Interface, namespace string, a audit.Anchor) (*audit.AnchorResetRecord, error) {
	leases := c.CoordinationV1().Leases(namespace)
	name := audit.AnchorLeaseName(a.Node)
	now := metav1.NewMicroTime(a.Time)
	cur, err := leases.Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		holder := a.Node
		l := &coordinationv1.Lease{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace, Annotations: a.Annotations()},
			Spec:       coordinationv1.LeaseSpec{HolderIdentity: &holder, RenewTime: &now},
		}
		if _, err = leases.Create(ctx, l, metav1.CreateOptions{}); err != nil {
			return nil, fmt.Errorf("creating the audit anchor Lease %s/%s: %w", namespace, name, err)
		}
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading the audit anchor Lease %s/%s: %w", namespace, name, err)
	}
	if cur.Annotations == nil {
		cur.Annotations = map[string]string{}
	}
	var reset *audit.AnchorResetRecord
	_, wasReset := cur.Annotations[audit.AnchorReset]
	if _, anchoredSince := cur.Annotations[audit.AnchorResetAtSeq]; wasReset && !anchoredSince {
		cur.Annotations[audit.AnchorResetAtSeq] = strconv.FormatUint(a.Seq, 10)
		reset = &audit.AnchorResetRecord{By: cur.Annotations[audit.AnchorResetBy], Reason: cur.Annotations[audit.AnchorReset], AtSeq: a.Seq}
	}
	for k, v := range a.Annotations() {
		cur.Annotations[k] = v
	}
	cur.Spec.RenewTime = &now
	if _, err := leases.Update(ctx, cur, metav1.UpdateOptions{}); err != nil {
		return nil, fmt.Errorf("updating the audit anchor Lease %s/%s to seq %d: %w", namespace, name, a.Seq, err)
	}
	return reset, nil
}
