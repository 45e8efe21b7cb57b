package controller

import (
	"fmt"
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/pipeguard/pipeguard/internal/version"
	"github.com/pipeguard/pipeguard/policy"
)

// Metrics are the policy controller's Prometheus metrics. A nil
// *Metrics records nothing.
type Metrics struct {
	generation      prometheus.Gauge
	policies        prometheus.Gauge
	invalid         prometheus.Gauge
	compileFailures prometheus.Counter
	builtin         prometheus.Gauge
	builtinPipes    prometheus.Gauge
	eventFailures   *prometheus.CounterVec
	adminTimeouts   *adminRuleTimeouts
	audit           *AuditMetrics
}

// NewMetrics creates the metrics and registers them with reg.
func NewMetrics(reg prometheus.Registerer) (*Metrics, error) {
	m := &Metrics{
		generation: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "pipeguard_policy_generation",
			Help: "Number of the policy generation in force on this replica.",
		}),
		policies: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "pipeguard_policies_loaded",
			Help: "Policies in the generation in force, the built-in default among them while it takes part.",
		}),
		invalid: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "pipeguard_policies_invalid",
			Help: "PipeAccessPolicies whose latest version does not compile.",
		}),
		compileFailures: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "pipeguard_policy_compile_failures_total",
			Help: "Policy set compiles in which at least one policy failed.",
		}),
		builtin: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "pipeguard_builtin_policy_in_force",
			Help: "1 while the built-in default policy takes part in decisions: alone, or beside PipeAccessPolicies that leave a CSI Proxy pipe unprotected.",
		}),
		builtinPipes: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "pipeguard_builtin_policy_pipes",
			Help: fmt.Sprintf("CSI Proxy pipes (of the %d CSI Proxy serves) that only the built-in default policy protects.", len(policy.CSIProxyPipes())),
		}),
		eventFailures: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "pipeguard_event_failures_total",
			Help: "Events pipeguard could not record, because the API server refused them or could not be reached, by the Event's reason (PipeAccessViolation, Invalid).",
		}, []string{"reason"}),
		adminTimeouts: &adminRuleTimeouts{desc: prometheus.NewDesc("pipeguard_admin_rule_timeouts_total",
			"Evaluations, in admission reviews and in the background audit, in which a policy's admin rules (spec.rego) took longer than the admin rule timeout and were stopped, failing closed, by policy; each replica counts its own.",
			[]string{"policy"}, nil)},
	}
	for _, c := range []prometheus.Collector{m.generation, m.policies, m.invalid, m.compileFailures, m.builtin, m.builtinPipes, m.eventFailures, m.adminTimeouts, version.Collector()} {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	audit, err := newAuditMetrics(reg)
	if err != nil {
		return nil, err
	}
	m.audit = audit
	return m, nil
}

// Audit returns the background audit's metrics, registered with the
// others.
func (m *Metrics) Audit() *AuditMetrics {
	if m == nil {
		return nil
	}
	return m.audit
}

func (m *Metrics) loaded(gen *policy.Generation, invalid int) {
	if m == nil {
		return
	}
	m.generation.Set(float64(gen.Number))
	m.policies.Set(float64(len(gen.Policies)))
	m.invalid.Set(float64(invalid))
	m.builtinPipes.Set(float64(len(gen.Default.Pipes)))
	if gen.Default.InForce {
		m.builtin.Set(1)
	} else {
		m.builtin.Set(0)
	}
}

func (m *Metrics) compileFailed() {
	if m == nil {
		return
	}
	m.compileFailures.Inc()
}

func (m *Metrics) eventFailed(reason string) {
	if m == nil {
		return
	}
	m.eventFailures.WithLabelValues(reason).Inc()
}

// adminRuleTimeouts is pipeguard_admin_rule_timeouts_total, read from the
// engine's counts when scraped: the engine counts every timeout, on every
// replica, whoever leads.
type adminRuleTimeouts struct {
	desc   *prometheus.Desc
	engine atomic.Pointer[policy.Engine]
}

func (a *adminRuleTimeouts) Describe(ch chan<- *prometheus.Desc) { ch <- a.desc }

func (a *adminRuleTimeouts) Collect(ch chan<- prometheus.Metric) {
	e := a.engine.Load()
	if e == nil {
		return
	}
	for _, t := range e.AdminRuleTimeouts() {
		ch <- prometheus.MustNewConstMetric(a.desc, prometheus.CounterValue, float64(t.Total), t.Policy)
	}
}

// countTimeouts has the metrics report engine's admin rule timeouts.
func (m *Metrics) countTimeouts(engine *policy.Engine) {
	if m == nil || engine == nil {
		return
	}
	m.adminTimeouts.engine.Store(engine)
}
