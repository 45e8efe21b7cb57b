package helm_test

import (
	"fmt"
	"strings"
	"testing"

	"helm.sh/helm/v4/pkg/action"
	"helm.sh/helm/v4/pkg/chart/v2/lint/support"
)

// lint runs Helm's lint checks (helm lint --strict) on the chart with sets.
func lint(t *testing.T, sets ...string) *action.LintResult {
	t.Helper()
	l := action.NewLint()
	l.Strict = true
	l.Namespace = "pipeguard-system"
	l.KubeVersion = kubeVersion(t)
	return l.Run([]string{chartDir}, values(t, sets...))
}

// messages formats lint messages as helm lint prints them.
func messages(r *action.LintResult) string {
	var b strings.Builder
	for _, m := range r.Messages {
		fmt.Fprintln(&b, m.Error())
	}
	for _, e := range r.Errors {
		fmt.Fprintln(&b, "error:", e)
	}
	return b.String()
}

// TestChartLints: the chart passes helm lint --strict with an image set,
// for each toggle: no warning and no error, only Helm's informational
// note that the chart has no icon.
func TestChartLints(t *testing.T) {
	for _, toggle := range []string{"", "certManager.enabled=true", "prometheus.enabled=true", "policyReport.enabled=true", "agent.enabled=true"} {
		t.Run("lint "+toggle, func(t *testing.T) {
			sets := append([]string{}, imageSets...)
			if toggle != "" {
				sets = append(sets, toggle)
			}
			r := lint(t, sets...)
			t.Logf("helm lint --strict charts/pipeguard --set %s:\n%s", strings.Join(sets, ","), messages(r))
			if r.TotalChartsLinted != 1 || len(r.Errors) > 0 {
				t.Fatalf("%d charts linted, errors:\n%s", r.TotalChartsLinted, messages(r))
			}
			for _, m := range r.Messages {
				if m.Severity > support.InfoSev {
					t.Errorf("lint message above info: %s", m.Error())
				}
				if m.Severity == support.InfoSev && !strings.Contains(m.Error(), "icon is recommended") {
					t.Errorf("unexpected lint note: %s", m.Error())
				}
			}
		})
	}
}

// TestLintWithDefaultValues: helm lint with no value set passes too.
// Helm's lint mode turns the chart's refusal of an unset image (a
// template fail, TestBadValuesAreRefused) into a log line, so linting needs
// no image, while helm install and helm template still refuse.
func TestLintWithDefaultValues(t *testing.T) {
	r := lint(t)
	t.Logf("helm lint --strict charts/pipeguard:\n%s", messages(r))
	if len(r.Errors) > 0 {
		t.Fatalf("helm lint with the default values fails:\n%s", messages(r))
	}
}
