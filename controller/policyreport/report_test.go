package policyreport

import (
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"k8s.io/apimachinery/pkg/types"

	"github.com/pipeguard/pipeguard/policy"
)

var t0 = time.Date(2026, 5, 1, 10, 0, 0, 123456789, time.UTC)

func podViolation(ns, name string, action policy.Verdict) Violation {
	return Violation{
		APIVersion: "v1", Kind: "Pod", Namespace: ns, Name: name, UID: types.UID("uid-" + name),
		Policy: "csi", Rule: "protected-pipe-mount", Action: action,
		Message:   `container "driver" mounts \\.\pipe\csi-proxy-disk-v1 through volume "pipe", but ...`,
		Container: "driver", Pipe: "csi-proxy-disk-v1",
	}
}

func TestResultMapping(t *testing.T) {
	for action, want := range map[policy.Verdict]string{policy.Deny: "fail", policy.Warn: "warn", policy.DryRun: "warn"} {
		v := podViolation("team-a", "bad", action)
		got := result(v, Timestamp{Seconds: 7})
		exp := Result{
			Source: "pipeguard", Policy: "csi", Rule: "protected-pipe-mount", Result: want, Severity: "high", Category: "Pipe access",
			Message:    v.Message,
			Resources:  []ObjectReference{{APIVersion: "v1", Kind: "Pod", Namespace: "team-a", Name: "bad", UID: "uid-bad"}},
			Properties: map[string]string{"action": string(action), "container": "driver", "pipe": "csi-proxy-disk-v1"},
			Timestamp:  Timestamp{Seconds: 7},
		}
		if !reflect.DeepEqual(got, exp) {
			t.Errorf("action %s:\n got %+v\nwant %+v", action, got, exp)
		}
	}
	// An admin rule may name neither container nor pipe: no empty
	// properties.
	v := podViolation("team-a", "bad", "deny")
	v.Container, v.Pipe = "", ""
	if got := result(v, Timestamp{}).Properties; !reflect.DeepEqual(got, map[string]string{"action": "deny"}) {
		t.Errorf("properties of a violation without container and pipe: %v", got)
	}
}

func TestBuildGroupsAndCounts(t *testing.T) {
	pv := Violation{APIVersion: "v1", Kind: "PersistentVolume", Name: "pipe-pv", UID: "uid-pv", Policy: "pipeguard-default",
		Rule: "protected-pipe-mount", Action: "deny", Message: "PersistentVolume mounts a pipe"}
	vs := []Violation{
		podViolation("team-a", "bad", "deny"),
		podViolation("team-a", "rollout", "warn"),
		podViolation("team-b", "dry", "dryrun"),
		podViolation("team-a", "bad", "deny"), // the same violation twice counts once
		pv,
	}
	got := Build(vs, t0, nil, Limits{})
	if len(got) != 3 {
		t.Fatalf("reports for %d namespaces, want 3 (team-a, team-b, cluster): %v", len(got), keys(got))
	}
	for ns, want := range map[string]Summary{"team-a": {Fail: 1, Warn: 1}, "team-b": {Warn: 1}, "": {Fail: 1}} {
		r := got[ns]
		if r == nil {
			t.Fatalf("no report for namespace %q", ns)
		}
		if r.Summary != want || len(r.Results) != want.Fail+want.Warn || r.Omitted != 0 {
			t.Errorf("namespace %q: summary %+v with %d results (%d omitted), want %+v", ns, r.Summary, len(r.Results), r.Omitted, want)
		}
	}
	if k := got[""].Kind(); k != "ClusterPolicyReport" {
		t.Errorf("cluster report kind %s", k)
	}
	if k := got["team-a"].Kind(); k != "PolicyReport" {
		t.Errorf("namespace report kind %s", k)
	}
	a := got["team-a"].Results
	if a[0].Resources[0].Name != "bad" || a[1].Resources[0].Name != "rollout" {
		t.Errorf("results out of the audit's order: %+v", a)
	}
	if a[0].Timestamp != (Timestamp{Seconds: t0.Unix()}) {
		t.Errorf("timestamp %+v, want the audit time in whole seconds", a[0].Timestamp)
	}
	if len(Build(nil, t0, nil, Limits{})) != 0 {
		t.Error("no violations must give no report")
	}
}

func keys(m map[string]*Report) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

// TestBuildBounds: a report never lists more than its limits allow, says
// how many it left out, and its summary still counts them all.
func TestBuildBounds(t *testing.T) {
	var vs []Violation
	for i := range 5 {
		vs = append(vs, podViolation("team-a", fmt.Sprintf("p%d", i), "deny"))
	}
	vs = append(vs, podViolation("team-b", "other", "warn"))
	got := Build(vs, t0, nil, Limits{Results: 2})
	a := got["team-a"]
	if len(a.Results) != 2 || a.Omitted != 3 || a.Summary.Fail != 5 {
		t.Errorf("capped at 2: %d results, %d omitted, summary %+v; want 2, 3, fail 5", len(a.Results), a.Omitted, a.Summary)
	}
	if b := got["team-b"]; len(b.Results) != 1 || b.Omitted != 0 {
		t.Errorf("the cap of one report touched another: %+v", b)
	}

	// The default limits: at most MaxResults.
	vs = vs[:0]
	for i := range MaxResults + 10 {
		vs = append(vs, podViolation("team-a", fmt.Sprintf("p%d", i), "deny"))
	}
	a = Build(vs, t0, nil, Limits{})["team-a"]
	if len(a.Results) != MaxResults || a.Omitted != 10 || a.Summary.Fail != MaxResults+10 {
		t.Errorf("default cap: %d results, %d omitted, summary %+v", len(a.Results), a.Omitted, a.Summary)
	}

	// Long messages: each is cut, and the byte budget stops the list
	// before the object grows past what the API server stores.
	vs = vs[:0]
	for i := range 600 {
		v := podViolation("team-a", fmt.Sprintf("p%d", i), "deny")
		v.Message = strings.Repeat("é", 10000)
		vs = append(vs, v)
	}
	a = Build(vs, t0, nil, Limits{})["team-a"]
	size := 0
	for _, r := range a.Results {
		// 4096 bytes hold 2046 two-byte runes and the three-byte mark.
		if want := strings.Repeat("é", 2046) + "…"; r.Message != want {
			t.Fatalf("message of %d bytes (valid UTF-8: %v) not cut to %d with a mark", len(r.Message), utf8.ValidString(r.Message), MaxMessageLength)
		}
		size += len(identity(r)) + 64
	}
	if size > MaxResultBytes || a.Omitted == 0 || len(a.Results)+a.Omitted != 600 || a.Summary.Fail != 600 {
		t.Errorf("byte budget: %d results of %d bytes, %d omitted, summary %+v", len(a.Results), size, a.Omitted, a.Summary)
	}
	// A single result larger than the budget leaves the list empty rather
	// than over budget.
	a = Build(vs[:1], t0, nil, Limits{Bytes: 100})["team-a"]
	if len(a.Results) != 0 || a.Omitted != 1 || a.Summary.Fail != 1 {
		t.Errorf("tiny budget: %d results, %d omitted, summary %+v", len(a.Results), a.Omitted, a.Summary)
	}
}

// TestStampsKeepTimestamps: an unchanged violation keeps the timestamp of
// the stored report, so the report is not rewritten; a changed one gets
// the new pass's time.
func TestStampsKeepTimestamps(t *testing.T) {
	first := Build([]Violation{podViolation("team-a", "bad", "deny"), podViolation("team-a", "other", "deny")}, t0, nil, Limits{})["team-a"]
	stamps := Stamps{}
	stamps.Remember(first.Results)
	later := t0.Add(time.Hour)
	changed := podViolation("team-a", "other", "warn")
	second := Build([]Violation{podViolation("team-a", "bad", "deny"), changed}, later, stamps, Limits{})["team-a"]
	if second.Results[0].Timestamp != first.Results[0].Timestamp {
		t.Errorf("unchanged violation: timestamp %+v, want the stored %+v", second.Results[0].Timestamp, first.Results[0].Timestamp)
	}
	if second.Results[1].Timestamp.Seconds != later.Unix() {
		t.Errorf("changed violation: timestamp %+v, want the new pass's %d", second.Results[1].Timestamp, later.Unix())
	}
	again := Build([]Violation{podViolation("team-a", "bad", "deny"), podViolation("team-a", "other", "deny")}, later, stamps, Limits{})
	plan := MakePlan(WGPolicy(), again, []Stored{{Key: Key{KindPolicyReport, "team-a", ReportName}, Summary: first.Summary, Results: first.Results}})
	if len(plan.Create)+len(plan.Update)+len(plan.Delete) != 0 {
		t.Errorf("the same violations an hour later must write nothing: %+v", plan)
	}
}

func TestMakePlan(t *testing.T) {
	want := Build([]Violation{
		podViolation("same", "bad", "deny"),
		podViolation("changed", "bad", "warn"),
		podViolation("new", "bad", "deny"),
		{APIVersion: "v1", Kind: "PersistentVolume", Name: "pv", Policy: "p", Rule: "r", Action: "deny", Message: "m"},
	}, t0, nil, Limits{})
	stored := func(ns string, r *Report) Stored {
		kind := KindPolicyReport
		if ns == "" {
			kind = KindClusterPolicyReport
		}
		s := Stored{Key: Key{kind, ns, ReportName}}
		if r != nil {
			s.Summary, s.Results, s.Omitted = r.Summary, r.Results, omitted(r.Omitted)
		}
		return s
	}
	oldChanged := Build([]Violation{podViolation("changed", "bad", "deny")}, t0, nil, Limits{})["changed"]
	plan := MakePlan(WGPolicy(), want, []Stored{
		stored("same", want["same"]),
		stored("changed", oldChanged),
		stored("gone", nil),                                      // violations gone: delete
		{Key: Key{KindPolicyReport, "same", "pipeguard-old"}},    // pipeguard's label, another name: delete
		stored("", want[""]),                                     // cluster report unchanged
		{Key: Key{KindClusterPolicyReport, "", "pipeguard-old"}}, // delete
	})
	var got []string
	for _, r := range plan.Create {
		got = append(got, "create "+r.Kind()+" "+r.Namespace)
	}
	for _, u := range plan.Update {
		got = append(got, "update "+u.Stored.Kind+" "+u.Stored.Namespace)
	}
	for _, k := range plan.Delete {
		got = append(got, "delete "+k.Kind+" "+k.Namespace+"/"+k.Name)
	}
	exp := []string{
		"create PolicyReport new",
		"update PolicyReport changed",
		"delete ClusterPolicyReport /pipeguard-old",
		"delete PolicyReport gone/pipeguard",
		"delete PolicyReport same/pipeguard-old",
	}
	if strings.Join(got, "\n") != strings.Join(exp, "\n") {
		t.Errorf("plan:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(exp, "\n"))
	}

	// No violation anywhere: every stored report goes, the cluster's too.
	plan = MakePlan(WGPolicy(), nil, []Stored{stored("a", nil), stored("", nil)})
	if len(plan.Delete) != 2 || len(plan.Create)+len(plan.Update) != 0 {
		t.Errorf("no violations: %+v", plan)
	}

	// A change of the omitted count alone is a change.
	capped := Build([]Violation{podViolation("a", "x", "deny"), podViolation("a", "y", "deny")}, t0, nil, Limits{Results: 1})
	s := stored("a", capped["a"])
	s.Omitted = ""
	if plan := MakePlan(WGPolicy(), capped, []Stored{s}); len(plan.Update) != 1 {
		t.Errorf("a stored report without the omitted annotation must be updated: %+v", plan)
	}
}
