package policyreport

import (
	"encoding/json"
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"github.com/pipeguard/pipeguard/controller/limits"
	"github.com/pipeguard/pipeguard/policy"
)

const (
	// ReportName names every report pipeguard writes: the PolicyReport in
	// each namespace and the ClusterPolicyReport.
	ReportName = "pipeguard"
	// Source is the source of every result.
	Source = "pipeguard"
	// Category is the category of every result.
	Category = "Pipe access"
	// ManagedByLabel and ManagedBy mark pipeguard's reports; reports with
	// this label and no violations left are deleted.
	ManagedByLabel = "app.kubernetes.io/managed-by"
	ManagedBy      = "pipeguard"
	// OmittedAnnotation holds, on a report that had to leave results out,
	// how many it left out.
	OmittedAnnotation = "pipeguard.io/omitted-results"

	// MaxResults is how many results one report lists at most.
	MaxResults = 1000
	// MaxResultBytes bounds the encoded results of one report, well under
	// the API server's and etcd's limits on an object's size.
	MaxResultBytes = 1 << 20
	// MaxMessageLength is where a result's message is cut; the CRD sets
	// no maxLength, so the bound is the one of the policy's status.
	MaxMessageLength = limits.Message
)

// Result values of the format that pipeguard writes (wgpolicyk8s.io
// v1alpha2 and openreports.io v1alpha1 share them).
const (
	ResultFail = "fail"
	ResultWarn = "warn"
	// ResultError is the result of an object the audit could not
	// evaluate (policy.Error): its policy's admin rules ran out of time
	// or raised an error, and admission would reject it.
	ResultError = "error"
	// ResultPass is written only by `pipeguard policy eval
	// --policy-report`, for an object a policy admits with nothing to
	// report; the background audit reports violations only.
	ResultPass = "pass"
)

// GroupVersion is the API of the wgpolicyk8s.io reports ([WGPolicy]).
var GroupVersion = schema.GroupVersion{Group: "wgpolicyk8s.io", Version: "v1alpha2"}

// Kinds of the wgpolicyk8s.io reports.
const (
	KindPolicyReport        = "PolicyReport"
	KindClusterPolicyReport = "ClusterPolicyReport"
)

// Violation is one violation the audit found on one object under one
// policy.
type Violation struct {
	// The violating object.
	APIVersion, Kind, Namespace, Name string
	UID                               types.UID
	// Policy names the PipeAccessPolicy, or the built-in default.
	Policy string
	// Rule is the rule id, e.g. protected-pipe-mount.
	Rule string
	// Action is the policy's enforcement action: deny, warn or dryrun; or
	// error for an object that could not be evaluated.
	Action policy.Verdict
	// Message is the rule's message, without the rule id.
	Message string
	// Container and Pipe are empty for admin rules that name neither.
	Container, Pipe string
}

// Of lists the violations vs of one object (obj: its apiVersion, kind,
// namespace, name and UID) for the reports: one per violation and policy,
// a violation that names no policy (an admin rule's) under the built-in
// default.
func Of(obj ObjectReference, vs []policy.Violation) []Violation {
	var out []Violation
	for _, v := range vs {
		pols := v.Policies
		if len(pols) == 0 {
			pols = []string{policy.DefaultPolicyName}
		}
		for _, p := range pols {
			out = append(out, Violation{
				APIVersion: obj.APIVersion, Kind: obj.Kind, Namespace: obj.Namespace, Name: obj.Name, UID: obj.UID,
				Policy: p, Rule: v.Rule, Action: v.Action, Message: v.Message, Container: v.Container, Pipe: v.Pipe,
			})
		}
	}
	return out
}

// Summary counts a report's results by result value.
type Summary struct {
	Pass  int `json:"pass"`
	Fail  int `json:"fail"`
	Warn  int `json:"warn"`
	Error int `json:"error"`
	Skip  int `json:"skip"`
}

// ObjectReference names a violating object.
type ObjectReference struct {
	APIVersion string    `json:"apiVersion,omitempty"`
	Kind       string    `json:"kind,omitempty"`
	Namespace  string    `json:"namespace,omitempty"`
	Name       string    `json:"name,omitempty"`
	UID        types.UID `json:"uid,omitempty"`
}

// Timestamp is the v1alpha2 result timestamp.
type Timestamp struct {
	Seconds int64 `json:"seconds"`
	Nanos   int32 `json:"nanos"`
}

// Result is one entry of a report's results.
type Result struct {
	Source     string            `json:"source,omitempty"`
	Policy     string            `json:"policy"`
	Rule       string            `json:"rule,omitempty"`
	Result     string            `json:"result,omitempty"`
	Severity   string            `json:"severity,omitempty"`
	Category   string            `json:"category,omitempty"`
	Message    string            `json:"message,omitempty"`
	Resources  []ObjectReference `json:"resources,omitempty"`
	Properties map[string]string `json:"properties,omitempty"`
	Timestamp  Timestamp         `json:"timestamp"`
}

// Report is the content of one PolicyReport (Namespace set) or of the
// ClusterPolicyReport (Namespace empty).
type Report struct {
	Namespace string
	Summary   Summary
	Results   []Result
	// Omitted is how many results the bounds left out; Summary counts
	// them.
	Omitted int
}

// Kind returns the report's kind in wgpolicyk8s.io/v1alpha2; see
// API.KindOf for the others.
func (r *Report) Kind() string {
	if r.Namespace == "" {
		return KindClusterPolicyReport
	}
	return KindPolicyReport
}

// Limits bound one report; zero fields take MaxResults and MaxResultBytes.
type Limits struct {
	Results int
	Bytes   int
}

func (l Limits) orDefault() Limits {
	if l.Results <= 0 {
		l.Results = MaxResults
	}
	if l.Bytes <= 0 {
		l.Bytes = MaxResultBytes
	}
	return l
}

// ResultOf maps an enforcement action to a result value: deny is fail,
// error (an object that could not be evaluated) is error, anything else
// (warn, dryrun) is warn.
func ResultOf(action policy.Verdict) string {
	switch action {
	case policy.Deny:
		return ResultFail
	case policy.Error:
		return ResultError
	}
	return ResultWarn
}

// Passed is the result of obj, which policyName admits with nothing to
// report, stamped at (in whole seconds).
func Passed(obj ObjectReference, policyName string, at time.Time) Result {
	return Result{
		Source:    Source,
		Policy:    policyName,
		Result:    ResultPass,
		Category:  Category,
		Resources: []ObjectReference{obj},
		Timestamp: Timestamp{Seconds: at.Unix()},
	}
}

// result maps one violation to a result stamped at.
func result(v Violation, at Timestamp) Result {
	props := map[string]string{"action": string(v.Action)}
	if v.Container != "" {
		props["container"] = v.Container
	}
	if v.Pipe != "" {
		props["pipe"] = limits.Cut(v.Pipe, MaxMessageLength)
	}
	return Result{
		Source:   Source,
		Policy:   v.Policy,
		Rule:     v.Rule,
		Result:   ResultOf(v.Action),
		Severity: "high",
		Category: Category,
		Message:  limits.Cut(v.Message, MaxMessageLength),
		Resources: []ObjectReference{{
			APIVersion: v.APIVersion, Kind: v.Kind, Namespace: v.Namespace, Name: v.Name, UID: v.UID,
		}},
		Properties: props,
		Timestamp:  at,
	}
}

// identity is what makes two results the same violation: everything but
// the timestamp.
func identity(r Result) string {
	r.Timestamp = Timestamp{}
	b, _ := json.Marshal(r)
	return string(b)
}

// Stamps remembers when each violation was first reported, from the
// reports already stored, so that an unchanged violation keeps its
// timestamp and its report is not rewritten.
type Stamps map[string]Timestamp

// Remember records the timestamps of rs. Where reports of two APIs hold
// the same violation, the earlier timestamp is kept, so that both say when
// it was first found.
func (s Stamps) Remember(rs []Result) {
	for _, r := range rs {
		id := identity(r)
		if old, ok := s[id]; ok && !before(r.Timestamp, old) {
			continue
		}
		s[id] = r.Timestamp
	}
}

func before(a, b Timestamp) bool {
	return a.Seconds < b.Seconds || (a.Seconds == b.Seconds && a.Nanos < b.Nanos)
}

// Build groups violations into reports by namespace ("" for the cluster
// report), in the order given, one result per violation; duplicates are
// dropped. A result takes its timestamp from stamps when an identical
// result is stored already, else now (in whole seconds). Each report
// keeps at most limits' results; its summary counts all.
func Build(violations []Violation, now time.Time, stamps Stamps, limits Limits) map[string]*Report {
	limits = limits.orDefault()
	nowTS := Timestamp{Seconds: now.Unix()}
	out := map[string]*Report{}
	size := map[string]int{}
	seen := map[string]bool{}
	for _, v := range violations {
		r := result(v, nowTS)
		id := identity(r)
		key := v.Namespace + "\x00" + id
		if seen[key] {
			continue
		}
		seen[key] = true
		if ts, ok := stamps[id]; ok {
			r.Timestamp = ts
		}
		rep := out[v.Namespace]
		if rep == nil {
			rep = &Report{Namespace: v.Namespace}
			out[v.Namespace] = rep
		}
		switch r.Result {
		case ResultFail:
			rep.Summary.Fail++
		case ResultError:
			rep.Summary.Error++
		default:
			rep.Summary.Warn++
		}
		n := len(id) + 64 // the timestamp and separators
		if rep.Omitted > 0 || len(rep.Results) >= limits.Results || size[v.Namespace]+n > limits.Bytes {
			rep.Omitted++
			continue
		}
		size[v.Namespace] += n
		rep.Results = append(rep.Results, r)
	}
	return out
}
