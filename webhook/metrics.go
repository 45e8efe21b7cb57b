package webhook

import (
	"context"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/pipeguard/pipeguard/policy"
)

// Metrics records every review in Prometheus. It is an Observer.
type Metrics struct {
	requests   *prometheus.CounterVec
	latency    *prometheus.HistogramVec
	violations *prometheus.CounterVec
	decisions  *prometheus.CounterVec
}

// NewMetrics creates the admission metrics and registers them with reg.
func NewMetrics(reg prometheus.Registerer) (*Metrics, error) {
	m := &Metrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "pipeguard_admission_requests_total",
			Help: "Admission reviews by kind, operation, decision (admitted, rejected, error) and enforcement action (none, deny, warn, dryrun).",
		}, []string{"kind", "operation", "decision", "action"}),
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "pipeguard_admission_review_duration_seconds",
			Help: "Time to review one admission request, from decoded request to response, excluding HTTP and TLS.",
			// 25µs to about 200ms: reviews without a host path take
			// microseconds, rego evaluations well under a millisecond.
			Buckets: prometheus.ExponentialBuckets(25e-6, 2, 14),
		}, []string{"kind"}),
		violations: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "pipeguard_admission_violations_total",
			Help: "Violations found, by rule and enforcement action; dryrun violations are counted here and logged, not enforced.",
		}, []string{"rule", "action"}),
		decisions: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "pipeguard_admission_decisions_total",
			Help: "Reviews that needed a policy decision, by source: rego (evaluated) or cache (remembered from an evaluation of the same facts by the same policy generation).",
		}, []string{"source"}),
	}
	for _, c := range []prometheus.Collector{m.requests, m.latency, m.violations, m.decisions} {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	return m, nil
}

// ObserveReview implements Observer.
func (m *Metrics) ObserveReview(_ context.Context, r Review) {
	decision, action := "admitted", "none"
	switch {
	case r.Err != nil:
		decision = "error"
	case r.Verdict == policy.Deny:
		decision, action = "rejected", string(policy.Deny)
	case r.Verdict == policy.Warn || r.Verdict == policy.DryRun:
		action = string(r.Verdict)
	}
	m.requests.WithLabelValues(r.Kind, r.Operation, decision, action).Inc()
	m.latency.WithLabelValues(r.Kind).Observe(r.Duration.Seconds())
	if r.Decided == nil {
		return
	}
	switch {
	case r.Decided.Cached:
		m.decisions.WithLabelValues("cache").Inc()
	case r.Decided.Evaluated:
		m.decisions.WithLabelValues("rego").Inc()
	}
	for _, set := range [][]policy.Violation{r.Decided.Deny, r.Decided.Warn, r.Decided.DryRun} {
		for _, v := range set {
			m.violations.WithLabelValues(v.Rule, string(v.Action)).Inc()
		}
	}
}
