package install_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/pipeguard/pipeguard/controller"
	"github.com/pipeguard/pipeguard/webhook"
)

// registry records the names of the metrics registered with it.
type registry struct{ names map[string]bool }

var fqName = regexp.MustCompile(`fqName: "([^"]+)"`)

func (r *registry) Register(c prometheus.Collector) error {
	ch := make(chan *prometheus.Desc)
	go func() { c.Describe(ch); close(ch) }()
	for d := range ch {
		if m := fqName.FindStringSubmatch(d.String()); m != nil {
			r.names[m[1]] = true
		}
	}
	return nil
}

func (r *registry) MustRegister(cs ...prometheus.Collector) {
	for _, c := range cs {
		_ = r.Register(c)
	}
}

func (r *registry) Unregister(prometheus.Collector) bool { return false }

// TestDashboardQueriesExportedMetrics keeps the Grafana dashboard in step
// with the metrics pipeguard-webhook exports: a renamed metric must not
// leave a panel silently empty.
func TestDashboardQueriesExportedMetrics(t *testing.T) {
	reg := &registry{names: map[string]bool{}}
	if _, err := webhook.NewMetrics(reg); err != nil {
		t.Fatal(err)
	}
	if _, err := controller.NewMetrics(reg); err != nil {
		t.Fatal(err)
	}
	if len(reg.names) == 0 {
		t.Fatal("no metric names recorded")
	}

	b, err := os.ReadFile(filepath.Join(repoRoot, "config", "prometheus", "grafana-dashboard.json"))
	if err != nil {
		t.Fatal(err)
	}
	var dash struct {
		Panels []struct {
			Title   string `json:"title"`
			Targets []struct {
				Expr string `json:"expr"`
			} `json:"targets"`
		} `json:"panels"`
	}
	if err := json.Unmarshal(b, &dash); err != nil {
		t.Fatalf("grafana-dashboard.json: %v", err)
	}
	used := map[string]bool{}
	for _, p := range dash.Panels {
		if len(p.Targets) == 0 {
			t.Errorf("panel %q has no query", p.Title)
		}
		for _, target := range p.Targets {
			for _, name := range regexp.MustCompile(`pipeguard_[a-z_]+`).FindAllString(target.Expr, -1) {
				base := name
				for _, suffix := range []string{"_bucket", "_sum", "_count"} {
					if trimmed, ok := strings.CutSuffix(name, suffix); ok && reg.names[trimmed] {
						base = trimmed
					}
				}
				if !reg.names[base] {
					t.Errorf("panel %q queries %s, which pipeguard-webhook does not export", p.Title, name)
				}
				used[base] = true
			}
		}
	}
	var unused []string
	for name := range reg.names {
		if !used[name] {
			unused = append(unused, name)
		}
	}
	sort.Strings(unused)
	if len(unused) > 0 {
		t.Errorf("no dashboard panel shows %s", strings.Join(unused, ", "))
	}
}
