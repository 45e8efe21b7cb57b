package server

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus"
)

// TestMetricsReportTheBuild: the agent's registry carries pipeguard_build_info.
func TestMetricsReportTheBuild(t *testing.T) {
	reg := prometheus.NewRegistry()
	if _, err := NewMetrics(reg); err != nil {
		t.Fatal(err)
	}
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() == "pipeguard_build_info" && len(f.GetMetric()) == 1 && f.GetMetric()[0].GetGauge().GetValue() == 1 {
			return
		}
	}
	t.Fatal("the agent's metrics have no pipeguard_build_info of 1")
}
