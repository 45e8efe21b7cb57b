package inflight

import (
	"fmt"

	"github.com/prometheus/client_golang/prometheus"
)

// Metrics count the refusals and the releases at MaxHold of every Table
// that has them.
type Metrics struct {
	refused  *prometheus.CounterVec
	released *prometheus.CounterVec
}

// NewMetrics registers the metrics with reg.
func NewMetrics(reg prometheus.Registerer) (*Metrics, error) {
	m := &Metrics{
		refused: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "pipeguard", Subsystem: "agent", Name: "storage_operations_refused_total",
			Help: "Storage operations refused (Aborted) because another operation on the same volume, disk, share or iSCSI target was running or might still be, by API group and refused method.",
		}, []string{"group", "op"}),
		released: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "pipeguard", Subsystem: "agent", Name: "storage_operations_unsettled_released_total",
			Help: "Volumes, disks, shares or iSCSI targets released MaxHold after an operation's deadline passed without the agent seeing the storage provider done, by API group and that operation.",
		}, []string{"group", "op"}),
	}
	for _, c := range []prometheus.Collector{m.refused, m.released} {
		if err := reg.Register(c); err != nil {
			return nil, fmt.Errorf("registering storage operation metrics: %w", err)
		}
	}
	return m, nil
}

func (m *Metrics) refuse(group, op string) {
	if m != nil {
		m.refused.WithLabelValues(group, op).Inc()
	}
}

func (m *Metrics) release(group, op string) {
	if m != nil {
		m.released.WithLabelValues(group, op).Inc()
	}
}

// Refused is the counter of refusals of op in group, for tests.
func (m *Metrics) Refused(group, op string) prometheus.Counter {
	return m.refused.WithLabelValues(group, op)
}
