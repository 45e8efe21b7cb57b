package install_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/pipeguard/pipeguard/agent/audit"
	"github.com/pipeguard/pipeguard/agent/audit/anchor"
	"github.com/pipeguard/pipeguard/agent/confine"
	"github.com/pipeguard/pipeguard/agent/gate"
	"github.com/pipeguard/pipeguard/agent/groups/inflight"
	"github.com/pipeguard/pipeguard/agent/guard"
	"github.com/pipeguard/pipeguard/agent/server"
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
// with the metrics pipeguard-webhook and pipeguard-agent export: a renamed
// metric must not leave a panel silently empty, and every metric has a
// panel.
func TestDashboardQueriesExportedMetrics(t *testing.T) {
	names := exportedMetrics(t)
	b, err := os.ReadFile(filepath.Join(repoRoot, "config", "prometheus", "grafana-dashboard.json"))
	if err != nil {
		t.Fatal(err)
	}
	for _, problem := range dashboardProblems(t, names, b) {
		t.Error(problem)
	}
}

// TestDashboardCheckCatchesTypos makes sure the check above would fail: a
// panel querying a misspelt agent metric, and an agent metric no panel
// shows, are both reported.
func TestDashboardCheckCatchesTypos(t *testing.T) {
	names := exportedMetrics(t)
	b, err := os.ReadFile(filepath.Join(repoRoot, "config", "prometheus", "grafana-dashboard.json"))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ metric, typo, want string }{
		{"pipeguard_agent_gate_decisions_total", "pipeguard_agent_gate_decision_total", "queries pipeguard_agent_gate_decision_total, which neither"},
		{"pipeguard_agent_request_duration_seconds_bucket", "pipeguard_agent_request_duration_second_bucket", "queries pipeguard_agent_request_duration_second_bucket, which neither"},
		{"pipeguard_agent_audit_anchor_failures_total", "pipeguard_agent_audit_anchor_failure_total", "no dashboard panel shows pipeguard_agent_audit_anchor_failures_total"},
	} {
		if !strings.Contains(string(b), tc.metric) {
			t.Fatalf("the dashboard does not query %s", tc.metric)
		}
		broken := strings.ReplaceAll(string(b), tc.metric, tc.typo)
		problems := strings.Join(dashboardProblems(t, names, []byte(broken)), "\n")
		if !strings.Contains(problems, tc.want) {
			t.Errorf("with %s misspelt as %s the check reports %q, want it to say %q", tc.metric, tc.typo, problems, tc.want)
		}
	}
}

// exportedMetrics returns the names of every metric the two binaries
// register: the webhook's and the controller's, and the agent's (request
// metrics and build info, the guard's, the audit outputs': anchor and
// webhook backend, and the storage operation holds'), each built by the
// constructor the binary uses.
func exportedMetrics(t *testing.T) map[string]bool {
	t.Helper()
	reg := &registry{names: map[string]bool{}}
	if _, err := webhook.NewMetrics(reg); err != nil {
		t.Fatal(err)
	}
	if _, err := controller.NewMetrics(reg); err != nil {
		t.Fatal(err)
	}
	if _, err := server.NewMetrics(reg); err != nil {
		t.Fatal(err)
	}
	registerGuardMetrics(t, reg)
	registerAuditOutputMetrics(t, reg)
	if _, err := inflight.NewMetrics(reg); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"pipeguard_build_info", "pipeguard_agent_requests_total", "pipeguard_agent_gate_decisions_total", "pipeguard_agent_audit_anchor_failures_total", "pipeguard_agent_audit_webhook_sent_total"} {
		if !reg.names[name] {
			t.Fatalf("%s was not recorded: the registrations above miss part of what the binaries export", name)
		}
	}
	return reg.names
}

// registerGuardMetrics builds the agent's guard, which registers its
// decision and audit failure counters.
func registerGuardMetrics(t *testing.T, reg prometheus.Registerer) {
	t.Helper()
	dir := t.TempDir()
	engine, err := gate.New(context.Background(), gate.Options{Log: logr.Discard()})
	if err != nil {
		t.Fatal(err)
	}
	log, err := audit.Open(audit.Options{Path: filepath.Join(dir, "audit.log"), Log: logr.Discard()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = log.Close() })
	conf, err := confine.New(confine.Options{Flavour: confine.Linux, Roots: []string{dir}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := guard.New(guard.Options{Confiner: conf, Gate: engine, Audit: log, Registerer: reg}); err != nil {
		t.Fatal(err)
	}
}

// registerAuditOutputMetrics registers the collectors of the audit anchor
// publisher and of the audit webhook backend, as the agent does when it
// has a kubeconfig and a webhook config file.
func registerAuditOutputMetrics(t *testing.T, reg prometheus.Registerer) {
	t.Helper()
	p, err := anchor.New(anchor.Options{Client: fake.NewClientset(), Node: "node-1",
		Head: func() (audit.Head, error) { return audit.Head{}, nil }, Log: logr.Discard()})
	if err != nil {
		t.Fatal(err)
	}
	cfg := filepath.Join(t.TempDir(), "webhook.kubeconfig")
	kubeconfig := `apiVersion: v1
kind: Config
clusters: [{name: receiver, cluster: {server: "https://127.0.0.1:9"}}]
users: [{name: agent, user: {}}]
contexts: [{name: receiver, context: {cluster: receiver, user: agent}}]
current-context: receiver
`
	if err := os.WriteFile(cfg, []byte(kubeconfig), 0o600); err != nil {
		t.Fatal(err)
	}
	w, err := audit.NewWebhook(audit.WebhookOptions{ConfigFile: cfg, Log: logr.Discard()})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range append(p.Collectors(), w.Collectors()...) {
		if err := reg.Register(c); err != nil {
			t.Fatal(err)
		}
	}
}

// dashboardProblems checks a dashboard against the exported metric names:
// every panel has a query, every pipeguard_ metric a query names is
// exported (a histogram by its _bucket, _sum or _count series), and every
// exported metric is shown by some panel.
func dashboardProblems(t *testing.T, names map[string]bool, dashboard []byte) []string {
	t.Helper()
	var dash struct {
		Panels []struct {
			Title   string `json:"title"`
			Targets []struct {
				Expr string `json:"expr"`
			} `json:"targets"`
		} `json:"panels"`
	}
	if err := json.Unmarshal(dashboard, &dash); err != nil {
		t.Fatalf("grafana-dashboard.json: %v", err)
	}
	var problems []string
	used := map[string]bool{}
	for _, p := range dash.Panels {
		if len(p.Targets) == 0 {
			problems = append(problems, fmt.Sprintf("panel %q has no query", p.Title))
		}
		for _, target := range p.Targets {
			for _, name := range regexp.MustCompile(`pipeguard_[a-z_]+`).FindAllString(target.Expr, -1) {
				base := name
				for _, suffix := range []string{"_bucket", "_sum", "_count"} {
					if trimmed, ok := strings.CutSuffix(name, suffix); ok && names[trimmed] {
						base = trimmed
					}
				}
				if !names[base] {
					problems = append(problems, fmt.Sprintf("panel %q queries %s, which neither pipeguard-webhook nor pipeguard-agent exports", p.Title, name))
				}
				used[base] = true
			}
		}
	}
	var unused []string
	for name := range names {
		if !used[name] {
			unused = append(unused, name)
		}
	}
	sort.Strings(unused)
	if len(unused) > 0 {
		problems = append(problems, "no dashboard panel shows "+strings.Join(unused, ", "))
	}
	return problems
}
