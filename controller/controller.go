package controller

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	crcontroller "sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	"github.com/pipeguard/pipeguard/api/v1alpha1"
	"github.com/pipeguard/pipeguard/policy"
)

// ConditionReady is the condition that says whether a policy is in force.
const ConditionReady = "Ready"

// Condition reasons.
const (
	// ReasonEnforced: the latest spec is in force.
	ReasonEnforced = "Enforced"
	// ReasonInvalid: the latest spec does not compile (an invalid field,
	// rego that does not parse or type-check); the condition's message
	// has the error with file:row.
	ReasonInvalid = "Invalid"
	// ReasonConflict: the latest spec compiles on its own but not together
	// with the other policies (two policies declare one rego package).
	ReasonConflict = "Conflict"
	// ReasonUnguardedLabel: the latest spec's namespaceSelector reads a
	// label that anyone who may edit a namespace can set, so it is not in
	// force (policy.UnguardedLabelError).
	ReasonUnguardedLabel = "UnguardedLabel"
)

// Options configure a Controller.
type Options struct {
	Client client.Client
	Engine *policy.Engine
	// Recorder receives a Warning event for every policy that fails to
	// compile. Only the leader emits.
	Recorder events.EventRecorder
	// Elected is closed when this replica becomes leader, after which it
	// writes status. Nil: always leader (a single replica).
	Elected <-chan struct{}
	Metrics *Metrics
	// OnLoad, if set, is called after every new generation goes into
	// force (the background audit's trigger).
	OnLoad func()
	// APIReader reads the ServiceAccounts that policies name straight from
	// the API server (one GET each, see warnings.go), so that no
	// cluster-wide cache of ServiceAccounts is kept. Nil: Client.
	APIReader client.Reader
	// Recheck is how often the leader looks again at a warning that can go
	// away with nothing the controller watches changing (a ServiceAccount
	// a policy names that does not exist yet); DefaultAuditInterval when
	// zero.
	Recheck time.Duration
}

// Controller keeps a policy.Engine in step with the PipeAccessPolicies in the
// cluster. It runs on every replica, since each must answer reviews with the
// same policies; only the leader writes status and events.
//
// Every change recompiles the whole set. A policy that does not compile is
// replaced in the set by its last enforced version (kept in memory and in
// its status), so a broken edit never lapses enforcement and a replica that
// starts later enforces the same thing.
type Controller struct {
	opts Options

	mu       sync.Mutex
	lastGood map[string]v1alpha1.PipeAccessPolicy // by policy name
	// last is what the latest reconcile decided, for rewriting status
	// between reconciles (timeouts.go).
	last    *reconciled
	loaded  atomic.Bool
	resync  chan event.GenericEvent
	refresh chan event.GenericEvent
}

// New returns a Controller.
func New(opts Options) *Controller {
	opts.Metrics.countTimeouts(opts.Engine)
	if opts.Recheck <= 0 {
		opts.Recheck = DefaultAuditInterval
	}
	return &Controller{opts: opts, lastGood: map[string]v1alpha1.PipeAccessPolicy{},
		resync: make(chan event.GenericEvent, 1), refresh: make(chan event.GenericEvent, 1)}
}

// Loaded reports whether policies from the cluster have been compiled and
// put in force at least once. Readiness waits for it.
func (c *Controller) Loaded() bool { return c.loaded.Load() }

// allPolicies is the single work item: any change recompiles the set.
var allPolicies = reconcile.Request{}

// SetupWithManager registers the controller. It runs without leader
// election.
func (c *Controller) SetupWithManager(mgr ctrl.Manager) error {
	toAll := handler.EnqueueRequestsFromMapFunc(func(context.Context, client.Object) []reconcile.Request {
		return []reconcile.Request{allPolicies}
	})
	// The first compile must happen even when no policy exists, so queue
	// one pass for when the controller starts.
	c.resync <- event.GenericEvent{Object: &v1alpha1.PipeAccessPolicy{}}
	if c.opts.Elected != nil {
		// Write status as soon as this replica becomes leader.
		go func() {
			<-c.opts.Elected
			select {
			case c.resync <- event.GenericEvent{Object: &v1alpha1.PipeAccessPolicy{}}:
			default: // a pass is already queued
			}
		}()
	}
	if err := c.setupTimeouts(mgr); err != nil {
		return err
	}
	return ctrl.NewControllerManagedBy(mgr).
		Named("pipeaccesspolicy").
		For(&v1alpha1.PipeAccessPolicy{}, builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		WatchesRawSource(source.Channel(c.resync, toAll)).
		WatchesRawSource(source.Channel(c.refresh, toRefresh)).
		WatchesRawSource(namespacesComeAndGo(mgr)).
		// Several managers may live in one process (the integration
		// tests start one per control plane); names stay unique per manager.
		WithOptions(crcontroller.Options{NeedLeaderElection: ptr.To(false), MaxConcurrentReconciles: 1, SkipNameValidation: ptr.To(true)}).
		Complete(c)
}

// setupTimeouts adds the runnable that reports admin rules that ran out of
// time in the status of their policies; as a runnable that needs leader
// election, it runs on the leader only.
func (c *Controller) setupTimeouts(mgr ctrl.Manager) error {
	return mgr.Add(manager.RunnableFunc(c.reportTimeouts))
}

// outcome is what happened to one policy in a reconcile.
type outcome struct {
	err      error                      // nil: this version is in force
	reason   string                     // ReasonInvalid or ReasonConflict when err is set
	fallback *v1alpha1.PipeAccessPolicy // the version in force instead, if any
}

// Reconcile compiles every policy and puts the set in force; on
// refreshWarnings it only rewrites the warnings of the policies in force.
func (c *Controller) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	if req == refreshWarnings {
		return c.refreshWarnings(ctx)
	}
	log := logr.FromContextOrDiscard(ctx)
	var list v1alpha1.PipeAccessPolicyList
	if err := c.opts.Client.List(ctx, &list); err != nil {
		return reconcile.Result{}, fmt.Errorf("listing PipeAccessPolicies: %w", err)
	}
	sort.Slice(list.Items, func(i, j int) bool { return list.Items[i].Name < list.Items[j].Name })

	c.mu.Lock()
	defer c.mu.Unlock()

	outcomes := make(map[string]*outcome, len(list.Items))
	for i := range list.Items {
		outcomes[list.Items[i].Name] = &outcome{}
	}
	// Compile checks every policy on its own first; a policy that fails is
	// replaced by its last enforced version and the set compiled again.
	set := list.Items
	gen, err := c.opts.Engine.Load(ctx, set)
	var ce *policy.CompileError
	if errors.As(err, &ce) && blameEach(ce, outcomes) {
		set = nil
		for i := range list.Items {
			p := &list.Items[i]
			o := outcomes[p.Name]
			if o.err == nil {
				set = append(set, *p)
				continue
			}
			if o.fallback = c.fallback(ctx, p); o.fallback != nil {
				set = append(set, *o.fallback)
			}
			log.Info("PipeAccessPolicy does not compile", "policy", p.Name, "generation", p.Generation, "error", o.err.Error(), "fallback", o.fallback != nil)
		}
		gen, err = c.opts.Engine.Load(ctx, set)
	}
	if err != nil {
		// The policies compile one by one but not together (e.g. two share
		// a package): keep the generation in force and blame every policy
		// whose version in force would have changed.
		if !errors.As(err, &ce) {
			return reconcile.Result{}, err
		}
		c.opts.Metrics.compileFailed()
		log.Info("PipeAccessPolicies do not compile together", "error", err.Error())
		for i := range list.Items {
			p := &list.Items[i]
			if good, ok := c.lastGood[p.Name]; !ok || good.Generation != p.Generation {
				outcomes[p.Name] = &outcome{err: err, reason: ReasonConflict, fallback: ptrIf(ok, good)}
			}
		}
		c.last = newReconciled(list.Items, outcomes, c.opts.Engine.Current())
		c.writeStatus(ctx, list.Items, outcomes, c.last.gen)
		return reconcile.Result{}, nil
	}

	c.lastGood = map[string]v1alpha1.PipeAccessPolicy{}
	for _, p := range set {
		c.lastGood[p.Name] = p
	}
	c.loaded.Store(true)
	failed := 0
	for _, o := range outcomes {
		if o.err != nil {
			failed++
		}
	}
	if failed > 0 {
		c.opts.Metrics.compileFailed()
	}
	c.opts.Metrics.loaded(gen, failed)
	log.Info("policy generation in force", "generation", gen.Number, "policies", gen.Policies, "invalid", failed,
		"builtinDefault", gen.Default.InForce, "protection", gen.Default.String())
	c.last = newReconciled(list.Items, outcomes, gen)
	if c.writeStatus(ctx, list.Items, outcomes, gen) {
		c.queueRefresh()
	}
	if c.opts.OnLoad != nil {
		c.opts.OnLoad()
	}
	return reconcile.Result{}, nil
}

// blameEach records the error of every policy a CompileError names. It
// reports false, recording nothing, when the error is not
// one about individual policies (a set that fails only as a whole).
func blameEach(ce *policy.CompileError, outcomes map[string]*outcome) bool {
	for _, pe := range ce.Policies {
		if _, ok := outcomes[pe.Policy]; !ok {
			return false
		}
	}
	for _, pe := range ce.Policies {
		reason := ReasonInvalid
		var unguarded *policy.UnguardedLabelError
		if errors.As(pe.Err, &unguarded) {
			reason = ReasonUnguardedLabel
		}
		outcomes[pe.Policy].err, outcomes[pe.Policy].reason = pe.Err, reason
	}
	return true
}

// fallback returns the last version of p that was in force: from memory,
// else from its status (written by whichever replica led then).
func (c *Controller) fallback(ctx context.Context, p *v1alpha1.PipeAccessPolicy) *v1alpha1.PipeAccessPolicy {
	if good, ok := c.lastGood[p.Name]; ok {
		return &good
	}
	last := p.Status.LastEnforced
	if last == nil {
		return nil
	}
	good := p.DeepCopy()
	good.Generation = last.Generation
	good.Spec = *last.Spec.DeepCopy()
	if policy.CheckPolicy(ctx, good) != nil {
		return nil
	}
	return good
}

func (c *Controller) leader() bool {
	if c.opts.Elected == nil {
		return true
	}
	select {
	case <-c.opts.Elected:
		return true
	default:
		return false
	}
}
