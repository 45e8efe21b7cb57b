package server

import (
	"context"
	"fmt"
	"path"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"google.golang.org/grpc"
	"google.golang.org/grpc/status"

	"github.com/pipeguard/pipeguard/internal/version"
)

// Metrics holds the request counters and latency histogram.
type Metrics struct {
	requests *prometheus.CounterVec
	latency  *prometheus.HistogramVec
	refused  *prometheus.CounterVec
}

// NewMetrics creates the metrics and registers them on reg.
func NewMetrics(reg prometheus.Registerer) (*Metrics, error) {
	m := &Metrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "pipeguard", Subsystem: "agent", Name: "requests_total",
			Help: "CSI Proxy API requests handled, by API group, version, method and gRPC code.",
		}, []string{"group", "version", "method", "code"}),
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Namespace: "pipeguard", Subsystem: "agent", Name: "request_duration_seconds",
			Help:    "Time to handle a CSI Proxy API request, by API group, version and method.",
			Buckets: []float64{.0005, .001, .005, .01, .05, .1, .5, 1, 5, 15, 60},
		}, []string{"group", "version", "method"}),
		refused: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "pipeguard", Subsystem: "agent", Name: "connections_refused_total",
			Help: "Connections closed at once because their caller already held MaxConnectionsPerCaller connections to the endpoint, by API group and version.",
		}, []string{"group", "version"}),
	}
	for _, c := range []prometheus.Collector{m.requests, m.latency, m.refused, version.Collector()} {
		if err := reg.Register(c); err != nil {
			return nil, fmt.Errorf("registering agent metrics: %w", err)
		}
	}
	return m, nil
}

// Unary returns the interceptor that measures the unary calls of one API
// group version. It sees the final code: it is the first interceptor.
func (m *Metrics) Unary(group, version string) grpc.UnaryServerInterceptor {
	return func(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
		start := time.Now()
		resp, err := handler(ctx, req)
		m.observe(group, version, info.FullMethod, start, err)
		return resp, err
	}
}

// Stream returns the interceptor that measures the streaming calls of one API
// group version. CSI Proxy has none today; it keeps the chains symmetrical.
func (m *Metrics) Stream(group, version string) grpc.StreamServerInterceptor {
	return func(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, handler grpc.StreamHandler) error {
		start := time.Now()
		err := handler(srv, ss)
		m.observe(group, version, info.FullMethod, start, err)
		return err
	}
}

func (m *Metrics) observe(group, version, fullMethod string, start time.Time, err error) {
	method := path.Base(fullMethod)
	m.requests.WithLabelValues(group, version, method, status.Code(err).String()).Inc()
	m.latency.WithLabelValues(group, version, method).Observe(time.Since(start).Seconds())
}

// connectionRefused returns what counts a refused connection of one API
// group version.
func (m *Metrics) connectionRefused(group, version string) func() {
	c := m.refused.WithLabelValues(group, version)
	return c.Inc
}
