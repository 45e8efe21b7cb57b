package install_test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
	"text/template"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/promql/parser"
	"sigs.k8s.io/yaml"
)

// foreignMetrics are the series alerts may read that pipeguard does not
// export: Prometheus' own up, and the API server's admission webhook
// metrics (k8s.io/apiserver/pkg/admission/metrics).
var foreignMetrics = map[string]bool{
	"up": true,
	"apiserver_admission_webhook_rejection_count": true,
	"apiserver_admission_webhook_request_total":   true,
	"apiserver_admission_webhook_fail_open_count": true,
}

// wantAlerts are the alerts config/prometheus/alerts.yaml must hold.
var wantAlerts = []string{
	"PipeguardWebhookDown", "PipeguardWebhookErrors", "PipeguardRejectionSpike",
	"PipeguardPolicyInvalid", "PipeguardAuditPassFailing", "PipeguardEventsNotRecorded",
	"PipeguardAgentAuditRecordsLost", "PipeguardAgentAnchorFailures", "PipeguardAgentAuditWebhookDropping", "PipeguardAgentAuditUnsentPruned",
}

// TestAlertsQueryExportedMetrics checks config/prometheus/alerts.yaml as
// Prometheus' rule checker does (rulefmt: every expression parses, every
// template renders, every field is known), that each alert says what
// happened and what to do, and that every metric an expression reads is
// exported by pipeguard-webhook or pipeguard-agent, or is one of the few
// others the alerts are meant to read.
func TestAlertsQueryExportedMetrics(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(repoRoot, "config", "prometheus", "alerts.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	groups := ruleGroups(t, b)
	var alerts []string
	for _, g := range groups.Groups {
		for _, r := range g.Rules {
			alerts = append(alerts, r.Alert)
			if r.Annotations["summary"] == "" || len(r.Annotations["description"]) < 80 {
				t.Errorf("alert %s lacks a summary or a description a person can act on: %q", r.Alert, r.Annotations)
			}
			if s := r.Labels["severity"]; s != "critical" && s != "warning" {
				t.Errorf("alert %s has severity %q, want critical or warning", r.Alert, s)
			}
		}
	}
	for _, want := range wantAlerts {
		if !slices.Contains(alerts, want) {
			t.Errorf("alerts.yaml has no alert %s; it has %v", want, alerts)
		}
	}
	if problems := alertProblems(t, exportedMetrics(t), groups); len(problems) > 0 {
		t.Errorf("alerts.yaml is out of step with the exported metrics:\n%s", strings.Join(problems, "\n"))
	}
}

// TestAlertsCheckCatchesTypos: the check above fails on a misspelt
// metric, on an expression that does not parse, and on a metric of
// someone else's that is not on the list.
func TestAlertsCheckCatchesTypos(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(repoRoot, "config", "prometheus", "alerts.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	names := exportedMetrics(t)
	typo := strings.Replace(string(b), "pipeguard_policies_invalid", "pipeguard_policy_invalid", 1)
	if typo == string(b) {
		t.Fatal("alerts.yaml no longer reads pipeguard_policies_invalid; pick another metric to misspell")
	}
	problems := alertProblems(t, names, ruleGroups(t, []byte(typo)))
	if len(problems) != 1 || !strings.Contains(problems[0], `alert PipeguardPolicyInvalid reads pipeguard_policy_invalid, which neither pipeguard-webhook nor pipeguard-agent exports`) {
		t.Errorf("a misspelt metric gave %q", problems)
	}

	foreign := strings.Replace(string(b), "apiserver_admission_webhook_rejection_count", "apiserver_admission_webhook_rejections", 1)
	problems = alertProblems(t, names, ruleGroups(t, []byte(foreign)))
	if len(problems) != 1 || !strings.Contains(problems[0], "alert PipeguardWebhookErrors reads apiserver_admission_webhook_rejections") {
		t.Errorf("a misspelt API server metric gave %q", problems)
	}

	broken := strings.Replace(string(b), "max(pipeguard_policies_invalid) > 0", "max(pipeguard_policies_invalid > 0", 1)
	if _, errs := parseRules([]byte(broken)); len(errs) != 1 || !strings.Contains(errs[0].Error(), `"PipeguardPolicyInvalid": could not parse expression`) {
		t.Errorf("an unbalanced expression gave %v", errs)
	}
	badTemplate := strings.Replace(string(b), "{{ $labels.instance }}", "{{ $labels.instance }", 1)
	if _, errs := parseRules([]byte(badTemplate)); len(errs) != 1 || !strings.Contains(errs[0].Error(), "annotation summary") {
		t.Errorf("a broken template gave %v", errs)
	}
}

// rule is one rule of a rule group, as Prometheus reads it.
type rule struct {
	Record      string            `json:"record"`
	Alert       string            `json:"alert"`
	Expr        string            `json:"expr"`
	For         string            `json:"for"`
	Labels      map[string]string `json:"labels"`
	Annotations map[string]string `json:"annotations"`
}

type ruleGroup struct {
	Name     string `json:"name"`
	Interval string `json:"interval"`
	Rules    []rule `json:"rules"`
}

type ruleFile struct {
	Groups []ruleGroup `json:"groups"`
}

// ruleGroups parses the PrometheusRule's groups as Prometheus checks a
// rule file, failing the test on any error.
func ruleGroups(t *testing.T, prometheusRule []byte) *ruleFile {
	t.Helper()
	groups, errs := parseRules(prometheusRule)
	for _, err := range errs {
		t.Errorf("alerts.yaml: %v", err)
	}
	if groups == nil || len(groups.Groups) == 0 {
		t.Fatal("alerts.yaml holds no rule groups")
	}
	return groups
}

// parseRules reads the spec of a PrometheusRule, which is a rule file,
// rejecting unknown fields, and checks it as promtool check rules does:
// unique group names, each rule an alert or a record with an expression
// that parses, a valid for duration, and templates that parse.
func parseRules(prometheusRule []byte) (*ruleFile, []error) {
	var obj struct {
		APIVersion string          `json:"apiVersion"`
		Kind       string          `json:"kind"`
		Metadata   map[string]any  `json:"metadata"`
		Spec       json.RawMessage `json:"spec"`
	}
	if err := yaml.UnmarshalStrict(prometheusRule, &obj); err != nil {
		return nil, []error{err}
	}
	if obj.APIVersion != "monitoring.coreos.com/v1" || obj.Kind != "PrometheusRule" {
		return nil, []error{fmt.Errorf("%s %s, want a monitoring.coreos.com/v1 PrometheusRule", obj.APIVersion, obj.Kind)}
	}
	var f ruleFile
	if err := yaml.UnmarshalStrict(obj.Spec, &f); err != nil {
		return nil, []error{fmt.Errorf("spec: %w", err)}
	}
	p := parser.NewParser(parser.Options{})
	var errs []error
	seen := map[string]bool{}
	for _, g := range f.Groups {
		if g.Name == "" || seen[g.Name] {
			errs = append(errs, fmt.Errorf("group %q: a group needs a name of its own", g.Name))
		}
		seen[g.Name] = true
		for i, r := range g.Rules {
			id := fmt.Sprintf("group %q, rule %d, %q", g.Name, i+1, r.Alert+r.Record)
			if (r.Alert == "") == (r.Record == "") {
				errs = append(errs, fmt.Errorf("%s: a rule is an alert or a record", id))
			}
			if _, err := p.ParseExpr(r.Expr); err != nil {
				errs = append(errs, fmt.Errorf("%s: could not parse expression: %w", id, err))
			}
			if r.For != "" {
				if _, err := model.ParseDuration(r.For); err != nil {
					errs = append(errs, fmt.Errorf("%s: for: %w", id, err))
				}
			}
			for k, v := range r.Annotations {
				// Prometheus' templates are text/template with its functions.
				funcs := template.FuncMap{"humanize": fmt.Sprint, "humanizeDuration": fmt.Sprint, "humanizePercentage": fmt.Sprint, "humanizeTimestamp": fmt.Sprint}
				if _, err := template.New(k).Funcs(funcs).Parse("{{$labels := .Labels}}{{$value := .Value}}" + v); err != nil {
					errs = append(errs, fmt.Errorf("%s: annotation %s: %w", id, k, err))
				}
			}
		}
	}
	return &f, errs
}

// alertProblems lists every metric a rule reads that is neither exported
// by pipeguard (a histogram by its _bucket, _sum or _count series) nor in
// foreignMetrics.
func alertProblems(t *testing.T, names map[string]bool, groups *ruleFile) []string {
	t.Helper()
	p := parser.NewParser(parser.Options{})
	var problems []string
	for _, g := range groups.Groups {
		for _, r := range g.Rules {
			expr, err := p.ParseExpr(r.Expr)
			if err != nil {
				problems = append(problems, fmt.Sprintf("alert %s: %v", r.Alert, err))
				continue
			}
			read := map[string]bool{}
			parser.Inspect(expr, func(node parser.Node, _ []parser.Node) error {
				if vs, ok := node.(*parser.VectorSelector); ok {
					read[vs.Name] = true
				}
				return nil
			})
			var sorted []string
			for name := range read {
				sorted = append(sorted, name)
			}
			sort.Strings(sorted)
			for _, name := range sorted {
				if name == "" {
					problems = append(problems, fmt.Sprintf("alert %s selects series without a metric name", r.Alert))
					continue
				}
				base := name
				for _, suffix := range []string{"_bucket", "_sum", "_count"} {
					if trimmed, ok := strings.CutSuffix(name, suffix); ok && names[trimmed] {
						base = trimmed
					}
				}
				if !names[base] && !foreignMetrics[name] {
					problems = append(problems, fmt.Sprintf("alert %s reads %s, which neither pipeguard-webhook nor pipeguard-agent exports", r.Alert, name))
				}
			}
		}
	}
	return problems
}
