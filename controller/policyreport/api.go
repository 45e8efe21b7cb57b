package policyreport

import "k8s.io/apimachinery/pkg/runtime/schema"

// API is one of the report APIs that pipeguard writes: the same content,
// under other names.
type API struct {
	GroupVersion schema.GroupVersion
	// Namespaced and Cluster are the kinds of the namespaced reports and
	// of the cluster-scoped one.
	Namespaced, Cluster string
	// Noun names the reports in the log ("PolicyReports").
	Noun string
	// Install is the directory of the repository that installs the CRDs
	// (and the RBAC).
	Install string
	// ReportSource is written as the report's top-level source; empty
	// where the API has no such field.
	ReportSource string
}

// The APIs pipeguard writes to, each where the API server serves it; a
// function each returns a new value, so that no caller changes another's.

// WGPolicy is the Kubernetes Policy Working Group's
// wgpolicyk8s.io/v1alpha2, which Kyverno before 1.15 writes and Policy
// Reporter reads.
func WGPolicy() API {
	return API{
		GroupVersion: GroupVersion, Namespaced: KindPolicyReport, Cluster: KindClusterPolicyReport,
		Noun: "PolicyReports", Install: "config/policyreport",
	}
}

// OpenReports is openreports.io/v1alpha1, to which Kyverno 1.15 and
// Policy Reporter moved from wgpolicyk8s.io.
func OpenReports() API {
	return API{
		GroupVersion: OpenReportsGroupVersion, Namespaced: KindReport, Cluster: KindClusterReport,
		Noun: "openreports.io Reports", Install: "config/policyreport/openreports", ReportSource: Source,
	}
}

// APIs lists the report APIs in the order a pass writes them.
func APIs() []API { return []API{WGPolicy(), OpenReports()} }

// OpenReportsGroupVersion is the API of the openreports.io reports.
var OpenReportsGroupVersion = schema.GroupVersion{Group: "openreports.io", Version: "v1alpha1"}

// Kinds of the openreports.io reports.
const (
	KindReport        = "Report"
	KindClusterReport = "ClusterReport"
)

// KindOf returns the kind of r in this API.
func (a API) KindOf(r *Report) string {
	if r.Namespace == "" {
		return a.Cluster
	}
	return a.Namespaced
}

// Kinds returns the namespaced kind, then the cluster-scoped one.
func (a API) Kinds() []string { return []string{a.Namespaced, a.Cluster} }
