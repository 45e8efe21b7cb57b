package controller

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/api/meta"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/pipeguard/pipeguard/api/v1alpha1"
	"github.com/pipeguard/pipeguard/controller/inventory"
	"github.com/pipeguard/pipeguard/controller/limits"
	"github.com/pipeguard/pipeguard/internal/kinds"
	"github.com/pipeguard/pipeguard/policy"
	"github.com/pipeguard/pipeguard/webhook"
)

// MaxStatusViolations is how many violations a policy's status lists.
const MaxStatusViolations = 20

// AuditReport is the outcome of one audit pass.
type AuditReport struct {
	Time       time.Time
	Duration   time.Duration
	Generation int64
	// Objects is how many objects were evaluated.
	Objects int
	// Errors is how many of them could not be evaluated; each is among
	// Results with the verdict policy.Error.
	Errors int
	// Results holds every object with at least one violation or whose
	// evaluation failed, sorted as the table of package kinds, then
	// namespace and name.
	Results []AuditResult
	// ByPolicy holds each policy's violations, the built-in default's
	// under policy.DefaultPolicyName, in the order of Results.
	ByPolicy map[string][]v1alpha1.AuditViolation
}

// AuditResult is one violating object and its decision.
type AuditResult struct {
	Object client.Object
	inventory.Result
}

// AuditSource lists the objects of one kind; a cache reader is one.
type AuditSource = inventory.Lister

// Audit evaluates every object of the reviewed kinds that src holds with
// engine, as admission would on its creation, reading namespace labels
// through namespaces.
func Audit(ctx context.Context, src AuditSource, engine *policy.Engine, namespaces webhook.NamespaceLabels, now func() time.Time) (*AuditReport, error) {
	if now == nil {
		now = time.Now
	}
	start := now()
	gen := engine.Current()
	policies := gen.Policies
	rep := &AuditReport{Time: start, Generation: gen.Number, ByPolicy: map[string][]v1alpha1.AuditViolation{}}
	claims, err := inventory.ClaimsFrom(ctx, src)
	if err != nil {
		return nil, fmt.Errorf("audit: %w", err)
	}
	e := inventory.NewEvaluator(engine, namespaces, claims)
	for _, k := range kinds.All() {
		list := k.NewList()
		if err := src.List(ctx, list); err != nil {
			return nil, fmt.Errorf("audit: listing %s: %w", k.Resource, err)
		}
		items, err := itemsOf(list)
		if err != nil {
			return nil, err
		}
		sort.Slice(items, func(i, j int) bool {
			if items[i].GetNamespace() != items[j].GetNamespace() {
				return items[i].GetNamespace() < items[j].GetNamespace()
			}
			return items[i].GetName() < items[j].GetName()
		})
		for _, o := range items {
			rep.Objects++
			r, err := e.EvaluateObject(ctx, o)
			if err != nil {
				// One object that cannot be evaluated must not hide the
				// others' results: it is reported as an error, unless the
				// pass itself is being stopped.
				if ctx.Err() != nil {
					return nil, err
				}
				r = failed(k, o, err, policies)
				rep.Errors++
			}
			if r.Verdict == policy.Allow {
				continue
			}
			rep.Results = append(rep.Results, AuditResult{Object: o, Result: r})
			for _, v := range r.Violations() {
				av := v1alpha1.AuditViolation{Kind: r.Kind, Namespace: r.Namespace, Name: r.Name,
					Container: v.Container, Pipe: limits.Cut(v.Pipe, limits.Message), Action: string(v.Action),
					Message: limits.Cut(v.String(), limits.Message)}
				pols := v.Policies
				if len(pols) == 0 {
					// Admin rules name no policy; count them under the default.
					pols = []string{policy.DefaultPolicyName}
				}
				for _, p := range pols {
					rep.ByPolicy[p] = append(rep.ByPolicy[p], av)
				}
			}
		}
	}
	rep.Duration = now().Sub(start)
	return rep, nil
}

// RuleEvaluationError is the rule of the result the audit reports for an
// object it could not evaluate.
const RuleEvaluationError = "evaluation-error"

// failed is the result of an object whose evaluation failed with err: the
// verdict policy.Error, which admission would reject, with one entry
// naming the policy whose admin rules failed, or, for any other failure,
// every policy in force, since none of them could decide.
func failed(k kinds.Kind, o client.Object, err error, policies []string) inventory.Result {
	r := inventory.Result{APIVersion: k.GVK.GroupVersion().String(), Kind: k.GVK.Kind, Namespace: o.GetNamespace(), Name: o.GetName(), Verdict: policy.Error}
	cause := err.Error()
	var are *policy.AdminRuleError
	if errors.As(err, &are) {
		cause, policies = are.Error(), []string{are.Policy}
	}
	what := r.Kind + " " + r.Name
	if r.Namespace != "" {
		what = r.Kind + " " + r.Namespace + "/" + r.Name
	}
	r.Errors = []policy.Violation{{
		Rule: RuleEvaluationError, Action: policy.Error, Policies: policies,
		Message: fmt.Sprintf("%s could not be evaluated: %s", what, cause),
	}}
	return r
}

// itemsOf returns the objects of a typed list.
func itemsOf(list kinds.ObjectList) ([]client.Object, error) {
	objs, err := meta.ExtractList(list)
	if err != nil {
		return nil, fmt.Errorf("audit: reading %T: %w", list, err)
	}
	out := make([]client.Object, 0, len(objs))
	for _, o := range objs {
		co, ok := o.(client.Object)
		if !ok {
			return nil, fmt.Errorf("audit: %T in %T is not an object", o, list)
		}
		out = append(out, co)
	}
	return out, nil
}

// AuditMetrics are the background audit's Prometheus metrics. A nil
// *AuditMetrics records nothing.
type AuditMetrics struct {
	violations *prometheus.GaugeVec
	lastRun    prometheus.Gauge
	duration   prometheus.Histogram
}

// newAuditMetrics creates the metrics and registers them with reg.
func newAuditMetrics(reg prometheus.Registerer) (*AuditMetrics, error) {
	m := &AuditMetrics{
		violations: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "pipeguard_audit_violations",
			Help: "Violations the latest background audit found in existing Pods, workloads and PersistentVolumes, by policy (pipeguard-default for the built-in default) and enforcement action; action error counts the objects whose evaluation failed (their policy's admin rules ran out of time or raised an error), which admission would reject.",
		}, []string{"policy", "action"}),
		lastRun: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "pipeguard_audit_last_run_timestamp_seconds",
			Help: "Unix time at which the latest background audit pass started.",
		}),
		duration: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "pipeguard_audit_duration_seconds",
			Help:    "Duration of background audit passes.",
			Buckets: prometheus.ExponentialBuckets(0.01, 4, 8),
		}),
	}
	for _, c := range []prometheus.Collector{m.violations, m.lastRun, m.duration} {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	return m, nil
}

func (m *AuditMetrics) observe(rep *AuditReport, policies []string) {
	if m == nil {
		return
	}
	m.violations.Reset()
	for _, p := range policies {
		for _, a := range []string{string(v1alpha1.Deny), string(v1alpha1.Warn), string(v1alpha1.DryRun), string(policy.Error)} {
			m.violations.WithLabelValues(p, a).Set(0)
		}
	}
	for p, vs := range rep.ByPolicy {
		for _, v := range vs {
			m.violations.WithLabelValues(p, string(v.Action)).Inc()
		}
	}
	m.lastRun.Set(float64(rep.Time.UnixNano()) / 1e9)
	m.duration.Observe(rep.Duration.Seconds())
}
