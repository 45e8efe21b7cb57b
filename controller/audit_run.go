package controller

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/events"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/pipeguard/pipeguard/api/v1alpha1"
	"github.com/pipeguard/pipeguard/controller/inventory"
	"github.com/pipeguard/pipeguard/controller/limits"
	"github.com/pipeguard/pipeguard/controller/policyreport"
	"github.com/pipeguard/pipeguard/internal/kinds"
	"github.com/pipeguard/pipeguard/policy"
	"github.com/pipeguard/pipeguard/webhook"
)

// DefaultAuditInterval is how often the background audit runs when no
// interval is given.
const DefaultAuditInterval = time.Minute

// ReasonAuditViolation is the reason of the Warning event recorded on an
// existing object that violates a policy.
const ReasonAuditViolation = "PipeAccessViolation"

// AuditorOptions configure an Auditor.
type AuditorOptions struct {
	// Config reaches the API server; the auditor starts its own caches
	// from it, holding stripped objects only (see inventory.Strip).
	Config *rest.Config
	// Scheme knows the built-in types and PipeAccessPolicy.
	Scheme *runtime.Scheme
	// Client writes PipeAccessPolicy status.
	Client client.Client
	// Engine holds the policies in force.
	Engine *policy.Engine
	// Interval between passes; DefaultAuditInterval when zero.
	Interval time.Duration
	// Recorder, if set, receives a Warning event per violating object, at
	// most once per EventInterval for the same violations.
	Recorder events.EventRecorder
	// EventInterval defaults to one hour.
	EventInterval time.Duration
	Metrics       *AuditMetrics
	// Reports, if set, receives every violation of each pass, the
	// built-in default's included; a policyreport.Writer writes them as
	// PolicyReports.
	Reports ReportWriter
	// OnPass, if set, is called after every pass, its report in Last.
	OnPass func()
}

// ReportWriter records the violations of one audit pass, found at the
// time at.
type ReportWriter interface {
	Write(ctx context.Context, violations []policyreport.Violation, at time.Time) error
}

// Auditor runs the background audit on the leader: at start, on every
// Trigger (the policy controller triggers it on every new generation),
// on every change of a namespace's labels, and every Interval.
type Auditor struct {
	opts    AuditorOptions
	trigger chan struct{}

	mu     sync.Mutex
	last   *AuditReport
	events map[string]time.Time // object UID and messages → last event
}

var _ manager.LeaderElectionRunnable = (*Auditor)(nil)

// NewAuditor returns an Auditor; add it to a manager to run it.
func NewAuditor(opts AuditorOptions) (*Auditor, error) {
	if opts.Config == nil || opts.Scheme == nil || opts.Client == nil || opts.Engine == nil {
		return nil, fmt.Errorf("audit: Config, Scheme, Client and Engine are required")
	}
	if opts.Interval < 0 {
		return nil, fmt.Errorf("audit: interval %s is negative; give a positive interval", opts.Interval)
	}
	if opts.Interval == 0 {
		opts.Interval = DefaultAuditInterval
	}
	if opts.EventInterval == 0 {
		opts.EventInterval = time.Hour
	}
	return &Auditor{opts: opts, trigger: make(chan struct{}, 1), events: map[string]time.Time{}}, nil
}

// NeedLeaderElection makes the auditor run on the leader only: a replica
// that does not lead reads and writes nothing.
func (a *Auditor) NeedLeaderElection() bool { return true }

// Trigger asks for a pass soon; triggers while one is pending coalesce.
func (a *Auditor) Trigger() {
	select {
	case a.trigger <- struct{}{}:
	default:
	}
}

// Last returns the report of the latest pass, or nil.
func (a *Auditor) Last() *AuditReport {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.last
}

// Start runs passes until ctx ends.
func (a *Auditor) Start(ctx context.Context) error {
	log := logr.FromContextOrDiscard(ctx).WithName("audit")
	nsMeta := &metav1.PartialObjectMetadata{}
	nsMeta.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("Namespace"))
	c, err := cache.New(a.opts.Config, cache.Options{Scheme: a.opts.Scheme, DefaultTransform: inventory.Strip})
	if err != nil {
		return fmt.Errorf("audit: creating the cache: %w", err)
	}
	for _, k := range kinds.All() {
		if _, err := c.GetInformer(ctx, k.New()); err != nil {
			return fmt.Errorf("audit: informer for %s: %w", k.Resource, err)
		}
	}
	// Claims, for the pods that mount one bound to a protected
	// PersistentVolume (inventory.ClaimsFrom).
	if _, err := c.GetInformer(ctx, &corev1.PersistentVolumeClaim{}); err != nil {
		return fmt.Errorf("audit: informer for persistentvolumeclaims: %w", err)
	}
	nsInformer, err := c.GetInformer(ctx, nsMeta)
	if err != nil {
		return fmt.Errorf("audit: namespace informer: %w", err)
	}
	if _, err := nsInformer.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		UpdateFunc: func(oldObj, newObj any) {
			o, ok1 := oldObj.(client.Object)
			n, ok2 := newObj.(client.Object)
			if ok1 && ok2 && !maps.Equal(o.GetLabels(), n.GetLabels()) {
				a.Trigger()
			}
		},
	}); err != nil {
		return fmt.Errorf("audit: namespace handler: %w", err)
	}
	go func() {
		if err := c.Start(ctx); err != nil {
			log.Error(err, "audit cache stopped")
		}
	}()
	if !c.WaitForCacheSync(ctx) {
		return fmt.Errorf("audit: caches did not sync")
	}
	ticker := time.NewTicker(a.opts.Interval)
	defer ticker.Stop()
	for {
		if err := a.RunOnce(ctx, c); err != nil {
			log.Error(err, "audit pass failed")
		}
		select {
		case <-ctx.Done():
			return nil
		case <-ticker.C:
		case <-a.trigger:
		}
	}
}

// RunOnce runs one pass over the objects src holds and records its
// results: policy status, metrics, PolicyReports and events.
func (a *Auditor) RunOnce(ctx context.Context, src client.Reader) error {
	log := logr.FromContextOrDiscard(ctx).WithName("audit")
	rep, err := Audit(ctx, src, a.opts.Engine, webhook.CachedNamespaces{Reader: src}, nil)
	if err != nil {
		return err
	}
	a.mu.Lock()
	a.last = rep
	a.mu.Unlock()
	policies := a.opts.Engine.Current().Policies
	a.opts.Metrics.observe(rep, policies)
	a.writeStatus(ctx, rep)
	if a.opts.Reports != nil {
		if err := a.opts.Reports.Write(ctx, ReportViolations(rep), rep.Time); err != nil {
			log.Error(err, "audit: cannot write PolicyReports")
		}
	}
	a.recordEvents(rep)
	if a.opts.OnPass != nil {
		a.opts.OnPass()
	}
	for _, r := range rep.Results {
		for _, v := range r.Errors {
			log.Info("audit: cannot evaluate an object; it is reported as error", "kind", r.Kind, "namespace", r.Namespace, "name", r.Name, "policies", v.Policies, "error", v.Message)
		}
	}
	log.Info("audit pass", "generation", rep.Generation, "objects", rep.Objects, "violating", len(rep.Results)-rep.Errors, "errors", rep.Errors, "duration", rep.Duration.String())
	return nil
}

// writeStatus records each PipeAccessPolicy's audit results.
func (a *Auditor) writeStatus(ctx context.Context, rep *AuditReport) {
	log := logr.FromContextOrDiscard(ctx)
	var list v1alpha1.PipeAccessPolicyList
	if err := a.opts.Client.List(ctx, &list); err != nil {
		log.Error(err, "audit: cannot list PipeAccessPolicies")
		return
	}
	ts := metav1.NewTime(rep.Time.Truncate(time.Second))
	for i := range list.Items {
		p := &list.Items[i]
		vs := rep.ByPolicy[p.Name]
		total := len(vs)
		if len(vs) > MaxStatusViolations {
			vs = vs[:MaxStatusViolations]
		}
		base := p.DeepCopy()
		same := p.Status.TotalViolations != nil && *p.Status.TotalViolations == total && equality.Semantic.DeepEqual(p.Status.Violations, vs)
		p.Status.TotalViolations, p.Status.AuditTimestamp, p.Status.Violations = &total, &ts, vs
		if same && base.Status.AuditTimestamp != nil && base.Status.AuditTimestamp.Equal(&ts) {
			continue
		}
		if err := a.opts.Client.Status().Patch(ctx, p, client.MergeFrom(base)); err != nil {
			log.Error(err, "audit: cannot write PipeAccessPolicy status", "policy", p.Name)
		}
	}
}

// recordEvents records a Warning event on each violating object, at most
// once per EventInterval while its violations stay the same.
func (a *Auditor) recordEvents(rep *AuditReport) {
	if a.opts.Recorder == nil {
		return
	}
	var due []AuditResult
	a.mu.Lock()
	seen := make(map[string]time.Time, len(rep.Results))
	for _, r := range rep.Results {
		msgs := policy.Messages(r.Violations())
		key := string(r.Object.GetUID()) + "\x00" + fmt.Sprint(msgs)
		last, ok := a.events[key]
		if ok && rep.Time.Sub(last) < a.opts.EventInterval {
			seen[key] = last
			continue
		}
		seen[key] = rep.Time
		due = append(due, r)
	}
	a.events = seen
	a.mu.Unlock()
	// Outside the lock: a recorder may write each Event before it returns.
	for _, r := range due {
		a.opts.Recorder.Eventf(r.Object, nil, corev1.EventTypeWarning, ReasonAuditViolation, "Audit", "%s", violationNote(r))
	}
}

// violationNote is the note of the Event on a violating object: admission's
// messages about as many of its violations as an Event holds (those that
// would be denied first), then how many more there are and where to read
// them all.
func violationNote(r AuditResult) string {
	vs := slices.Clone(r.Violations())
	slices.SortStableFunc(vs, func(a, b policy.Violation) int {
		return cmp.Or(cmp.Compare(actionOrder[a.Action], actionOrder[b.Action]), strings.Compare(a.String(), b.String()))
	})
	head := fmt.Sprintf("%s %s: admission would %s this object: ", r.Kind, r.Name, verdictVerbs[r.Verdict])
	// The reports are in whichever of the two APIs is installed.
	report := policyreport.KindPolicyReport + " or " + policyreport.KindReport
	if r.Namespace == "" {
		report = policyreport.KindClusterPolicyReport + " or " + policyreport.KindClusterReport
	}
	return limits.Fit(limits.EventNote, len(vs),
		func(k int) string { return head + strings.Join(policy.Messages(vs[:k]), "; ") },
		func(more int) string {
			if more == 0 {
				return ""
			}
			return fmt.Sprintf("; … and %d more %s (see %s %s, or run pipeguard policy eval --cluster)",
				more, plural(more, "violation", "violations"), report, policyreport.ReportName)
		})
}

// actionOrder puts what admission would reject first: evaluation errors,
// then denials.
var actionOrder = map[policy.Verdict]int{policy.Error: 0, policy.Deny: 1, policy.Warn: 2, policy.DryRun: 3}

// verdictVerbs say, in an Event, what admission would do with an object.
var verdictVerbs = map[policy.Verdict]string{policy.Error: "reject", policy.Deny: "reject", policy.Warn: "warn about", policy.DryRun: "record (dryrun)"}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// ReportViolations lists the violations of rep for PolicyReports: one per
// violation and policy, a violation that names no policy (an admin rule's)
// under the built-in default, in the order of rep.Results.
func ReportViolations(rep *AuditReport) []policyreport.Violation {
	var out []policyreport.Violation
	for _, r := range rep.Results {
		out = append(out, policyreport.Of(policyreport.ObjectReference{
			APIVersion: r.APIVersion, Kind: r.Kind, Namespace: r.Namespace, Name: r.Name, UID: r.Object.GetUID(),
		}, r.Violations())...)
	}
	return out
}
