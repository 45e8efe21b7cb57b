package policy

import "github.com/prometheus/client_golang/prometheus"

// ControllerMetrics are the policy controller's Prometheus metrics. A nil
// *ControllerMetrics records nothing.
type ControllerMetrics struct {
	generation      prometheus.Gauge
	policies        prometheus.Gauge
	invalid         prometheus.Gauge
	compileFailures prometheus.Counter
}

// NewControllerMetrics creates the metrics and registers them with reg.
func NewControllerMetrics(reg prometheus.Registerer) (*ControllerMetrics, error) {
	m := &ControllerMetrics{
		generation: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "pipeguard_policy_generation",
			Help: "Number of the policy generation in force on this replica.",
		}),
		policies: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "pipeguard_policies_loaded",
			Help: "PipeAccessPolicies in the generation in force (1 for the built-in default).",
		}),
		invalid: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "pipeguard_policies_invalid",
			Help: "PipeAccessPolicies whose latest version does not compile.",
		}),
		compileFailures: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "pipeguard_policy_compile_failures_total",
			Help: "Policy set compiles in which at least one policy failed.",
		}),
	}
	for _, c := range []prometheus.Collector{m.generation, m.policies, m.invalid, m.compileFailures} {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	return m, nil
}

func (m *ControllerMetrics) loaded(gen *Generation, invalid int) {
	if m == nil {
		return
	}
	m.generation.Set(float64(gen.Number))
	m.policies.Set(float64(len(gen.Policies)))
	m.invalid.Set(float64(invalid))
}

func (m *ControllerMetrics) compileFailed() {
	if m == nil {
		return
	}
	m.compileFailures.Inc()
}
