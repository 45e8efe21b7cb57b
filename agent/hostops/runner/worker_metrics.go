package runner

import (
	"fmt"

	"github.com/prometheus/client_golang/prometheus"
)

// workerMetrics are the PowerShell worker pool's metrics.
type workerMetrics struct {
	starts   prometheus.Counter
	restarts *prometheus.CounterVec
	duration *prometheus.HistogramVec
	backoffs prometheus.Counter
}

func newWorkerMetrics(reg prometheus.Registerer) (*workerMetrics, error) {
	m := &workerMetrics{
		starts: prometheus.NewCounter(prometheus.CounterOpts{
			Namespace: "pipeguard", Subsystem: "agent_powershell", Name: "worker_starts_total",
			Help: "PowerShell worker processes started.",
		}),
		restarts: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "pipeguard", Subsystem: "agent_powershell", Name: "worker_restarts_total",
			Help: "PowerShell workers stopped mid-request, so that the next request starts a new one, by reason: " +
				"deadline (the request ended first), exited (the worker ended), protocol (it wrote something other than its answer).",
		}, []string{"reason"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Namespace: "pipeguard", Subsystem: "agent_powershell", Name: "request_duration_seconds",
			Help:    "Time a PowerShell worker took to answer a request (a worker's start included), by operation.",
			Buckets: []float64{.01, .05, .1, .25, .5, 1, 2.5, 5, 15, 30, 60, 120},
		}, []string{"operation"}),
		backoffs: prometheus.NewCounter(prometheus.CounterOpts{
			Namespace: "pipeguard", Subsystem: "agent_powershell", Name: "worker_backoffs_total",
			Help: "Requests that waited for the restart backoff first: their caller's previous requests ended before their answer, each killing its worker.",
		}),
	}
	for _, r := range []failure{restartDeadline, restartExited, restartProtocol} {
		m.restarts.WithLabelValues(string(r))
	}
	if reg == nil {
		return m, nil
	}
	for _, c := range []prometheus.Collector{m.starts, m.restarts, m.duration, m.backoffs} {
		if err := reg.Register(c); err != nil {
			return nil, fmt.Errorf("registering the PowerShell worker metrics: %w", err)
		}
	}
	return m, nil
}
