package main

import (
	"bytes"
	"io"
	"math"
	"os"
	"sort"
	"strings"
	"time"

	"sigs.k8s.io/yaml"

	"github.com/pipeguard/pipeguard/controller/policyreport"
	"github.com/pipeguard/pipeguard/policy"
)

// policyReportName names the reports policy eval --policy-report writes.
// It differs from the name of the background audit's reports, so that
// applying the file never collides with the reports pipeguard-webhook
// keeps.
const policyReportName = "pipeguard-policy-eval"

// reportObject is one PolicyReport or ClusterPolicyReport (Report or
// ClusterReport) as written.
type reportObject struct {
	APIVersion string                `json:"apiVersion"`
	Kind       string                `json:"kind"`
	Metadata   reportMeta            `json:"metadata"`
	Source     string                `json:"source,omitempty"`
	Summary    policyreport.Summary  `json:"summary"`
	Results    []policyreport.Result `json:"results,omitempty"`
}

// reportAPI returns the report API named by its group version.
func reportAPI(gv string) (policyreport.API, bool) {
	for _, api := range policyreport.APIs() {
		if api.GroupVersion.String() == gv {
			return api, true
		}
	}
	return policyreport.API{}, false
}

// reportAPINames lists the report APIs for the messages.
func reportAPINames() string {
	var names []string
	for _, api := range policyreport.APIs() {
		names = append(names, api.GroupVersion.String())
	}
	return strings.Join(names, " or ")
}

type reportMeta struct {
	Name      string `json:"name"`
	Namespace string `json:"namespace,omitempty"`
}

// policyReports maps results to reports with policyreport's mapping: a
// deny is a fail result, a warn or dryrun finding a warn result, one per
// violation and policy (the built-in default for a violation that names
// none). An object admitted with nothing to report gets a pass result for
// each policy in inForce, as kyverno apply --policy-report lists passes.
// Objects that are not reviewed are left out. One report of api per
// namespace, the cluster report (cluster-scoped objects) first.
func policyReports(api policyreport.API, results []evalResult, inForce []string, now time.Time) []reportObject {
	var violations []policyreport.Violation
	type pass struct {
		ns  string
		ref policyreport.ObjectReference
	}
	var passes []pass
	for _, r := range results {
		ref := policyreport.ObjectReference{APIVersion: r.APIVersion, Kind: r.Kind, Namespace: r.Namespace, Name: r.Name}
		if r.Decision == notReviewedDecision {
			continue
		}
		all := append(append(append([]policy.Violation{}, r.Deny...), r.Warn...), r.DryRun...)
		if len(all) == 0 {
			passes = append(passes, pass{r.Namespace, ref})
			continue
		}
		violations = append(violations, policyreport.Of(ref, all)...)
	}
	// A file has no size limit of etcd's: every result is written.
	reports := policyreport.Build(violations, now, nil, policyreport.Limits{Results: math.MaxInt32, Bytes: math.MaxInt32})
	for _, p := range passes {
		rep := reports[p.ns]
		if rep == nil {
			rep = &policyreport.Report{Namespace: p.ns}
			reports[p.ns] = rep
		}
		for _, name := range inForce {
			rep.Results = append(rep.Results, policyreport.Passed(p.ref, name, now))
			rep.Summary.Pass++
		}
	}
	namespaces := make([]string, 0, len(reports))
	for ns := range reports {
		namespaces = append(namespaces, ns)
	}
	sort.Strings(namespaces)
	out := make([]reportObject, 0, len(namespaces))
	for _, ns := range namespaces {
		rep := reports[ns]
		out = append(out, reportObject{
			APIVersion: api.GroupVersion.String(),
			Kind:       api.KindOf(rep),
			Metadata:   reportMeta{Name: policyReportName, Namespace: ns},
			Source:     api.ReportSource,
			Summary:    rep.Summary,
			Results:    rep.Results,
		})
	}
	return out
}

// writePolicyReport writes the reports of results, in api, as a YAML
// stream to the file path, or to stdout when path is "-".
func writePolicyReport(api policyreport.API, path string, stdout io.Writer, results []evalResult, inForce []string) error {
	var buf bytes.Buffer
	for i, rep := range policyReports(api, results, inForce, time.Now()) {
		if i > 0 {
			buf.WriteString("---\n")
		}
		b, err := yaml.Marshal(rep)
		if err != nil {
			return badInput("--policy-report: encoding the %s of %q: %v", rep.Kind, rep.Metadata.Namespace, err)
		}
		buf.Write(b)
	}
	if path == "-" {
		_, err := stdout.Write(buf.Bytes())
		return err
	}
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		return badInput("--policy-report %s: cannot write the report: %v", path, err)
	}
	return nil
}
