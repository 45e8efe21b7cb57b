package policyreport

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"sync"
	"testing"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/funcr"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
)

// discovery answers like an API server with or without the CRDs: kinds
// are the wgpolicyk8s.io kinds it serves, open the openreports.io ones.
type discovery struct {
	kinds, open []string
	err         error
	errs        map[string]error // by group version
	calls       map[string]int
}

func (d *discovery) ServerResourcesForGroupVersion(gv string) (*metav1.APIResourceList, error) {
	if d.calls == nil {
		d.calls = map[string]int{}
	}
	d.calls[gv]++
	if d.err != nil {
		return nil, d.err
	}
	if err := d.errs[gv]; err != nil {
		return nil, err
	}
	kinds := d.kinds
	if gv == OpenReportsGroupVersion.String() {
		kinds = d.open
	} else if gv != GroupVersion.String() {
		kinds = nil
	}
	if len(kinds) == 0 {
		return nil, apierrors.NewNotFound(schema.GroupResource{}, gv)
	}
	l := &metav1.APIResourceList{GroupVersion: gv}
	for _, k := range kinds {
		l.APIResources = append(l.APIResources, metav1.APIResource{Kind: k, Name: strings.ToLower(k) + "s"})
	}
	return l, nil
}

// logs collects what the writer logs.
type logs struct {
	mu    sync.Mutex
	lines []string
}

func (l *logs) ctx() context.Context {
	return logr.NewContext(context.Background(), funcr.New(func(prefix, args string) {
		l.mu.Lock()
		defer l.mu.Unlock()
		l.lines = append(l.lines, prefix+" "+args)
	}, funcr.Options{Verbosity: 0}))
}

func (l *logs) count(sub string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for _, s := range l.lines {
		if strings.Contains(s, sub) {
			n++
		}
	}
	return n
}

func fakeClient(t *testing.T, funcs *interceptor.Funcs, objs ...client.Object) client.WithWatch {
	t.Helper()
	mapper := meta.NewDefaultRESTMapper([]schema.GroupVersion{GroupVersion, OpenReportsGroupVersion})
	for _, api := range APIs() {
		mapper.Add(api.GroupVersion.WithKind(api.Namespaced), meta.RESTScopeNamespace)
		mapper.Add(api.GroupVersion.WithKind(api.Cluster), meta.RESTScopeRoot)
	}
	b := fake.NewClientBuilder().WithScheme(runtime.NewScheme()).WithRESTMapper(mapper).WithObjects(objs...)
	if funcs != nil {
		b = b.WithInterceptorFuncs(*funcs)
	}
	return b.Build()
}

func reports(t *testing.T, c client.Client) map[string]*unstructured.Unstructured {
	t.Helper()
	out := map[string]*unstructured.Unstructured{}
	for _, kind := range []string{KindPolicyReport, KindClusterPolicyReport} {
		l := &unstructured.UnstructuredList{}
		l.SetGroupVersionKind(GroupVersion.WithKind(kind + "List"))
		if err := c.List(context.Background(), l); err != nil {
			t.Fatal(err)
		}
		for i := range l.Items {
			u := &l.Items[i]
			out[describe(kind, u.GetNamespace(), u.GetName())] = u
		}
	}
	return out
}

func newWriter(t *testing.T, c client.Client, d Discovery, limits Limits) *Writer {
	t.Helper()
	w, err := NewWriter(Options{Client: c, Discovery: d, Limits: limits})
	if err != nil {
		t.Fatal(err)
	}
	return w
}

func TestNewWriterNeedsClientAndDiscovery(t *testing.T) {
	if _, err := NewWriter(Options{}); err == nil || !strings.Contains(err.Error(), "Options.Client") {
		t.Errorf("NewWriter without a client: %v", err)
	}
}

// TestWriterWithoutCRDs: the API server does not serve the reports, or
// only one of the kinds: nothing is written, nothing fails, and the log
// says so once, not on every pass.
func TestWriterWithoutCRDs(t *testing.T) {
	for name, kinds := range map[string][]string{"none": nil, "only PolicyReport": {KindPolicyReport}} {
		t.Run(name, func(t *testing.T) {
			writes := 0
			c := fakeClient(t, &interceptor.Funcs{
				Create: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
					writes++
					return c.Create(ctx, obj, opts...)
				},
				List: func(ctx context.Context, c client.WithWatch, list client.ObjectList, opts ...client.ListOption) error {
					writes++
					return c.List(ctx, list, opts...)
				},
			})
			d := &discovery{kinds: kinds}
			w := newWriter(t, c, d, Limits{})
			var l logs
			for range 3 {
				if err := w.Write(l.ctx(), []Violation{podViolation("team-a", "bad", "deny")}, t0); err != nil {
					t.Fatalf("Write without the CRDs: %v", err)
				}
			}
			if writes != 0 {
				t.Errorf("%d requests for reports the API server does not serve", writes)
			}
			for _, gv := range []string{"wgpolicyk8s.io/v1alpha2", "openreports.io/v1alpha1"} {
				if d.calls[gv] != 3 {
					t.Errorf("discovery asked for %s %d times in 3 passes, want once per pass", gv, d.calls[gv])
				}
			}
			if n := l.count("install config/policyreport to get them"); n != 1 {
				t.Errorf("logged the missing CRDs %d times in 3 passes, want once: %q", n, l.lines)
			}
		})
	}
}

func TestWriterDiscoveryError(t *testing.T) {
	w := newWriter(t, fakeClient(t, nil), &discovery{err: errors.New("connection refused")}, Limits{})
	err := w.Write(context.Background(), nil, t0)
	if err == nil || !strings.Contains(err.Error(), "wgpolicyk8s.io/v1alpha2") || !strings.Contains(err.Error(), "connection refused") {
		t.Errorf("Write when discovery fails: %v; want an error naming the group version and the cause", err)
	}
}

// TestWriterOneDiscoveryFails: when discovery fails for one group, the
// other is still written, and the error names the group that failed.
func TestWriterOneDiscoveryFails(t *testing.T) {
	c := fakeClient(t, nil)
	d := &discovery{kinds: []string{KindPolicyReport, KindClusterPolicyReport}, open: []string{KindReport, KindClusterReport},
		errs: map[string]error{"openreports.io/v1alpha1": errors.New("connection reset")}}
	w := newWriter(t, c, d, Limits{})
	err := w.Write(context.Background(), []Violation{podViolation("team-a", "bad", "deny")}, t0)
	if err == nil || !strings.Contains(err.Error(), "asking the API server whether it serves openreports.io/v1alpha1") || !strings.Contains(err.Error(), "connection reset") || strings.Contains(err.Error(), "wgpolicyk8s") {
		t.Errorf("Write when discovery of openreports.io fails: %v; want an error naming that group and the cause only", err)
	}
	if got := reports(t, c); got["PolicyReport team-a/pipeguard"] == nil {
		t.Errorf("a failure of one group stopped the other: reports %v", keysU(got))
	}
}

// TestWriterLifecycle: reports appear per namespace and for the cluster,
// are not rewritten when nothing changed, follow changes, and are deleted
// once their violations are gone; labels others add are kept.
func TestWriterLifecycle(t *testing.T) {
	updates := 0
	c := fakeClient(t, &interceptor.Funcs{
		Update: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.UpdateOption) error {
			updates++
			return c.Update(ctx, obj, opts...)
		},
	})
	d := &discovery{kinds: []string{KindPolicyReport, KindClusterPolicyReport}}
	w := newWriter(t, c, d, Limits{})
	pv := Violation{APIVersion: "v1", Kind: "PersistentVolume", Name: "pipe-pv", UID: "uid-pv", Policy: "pipeguard-default",
		Rule: "protected-pipe-mount", Action: "deny", Message: "m"}
	vs := []Violation{podViolation("team-a", "bad", "deny"), podViolation("team-b", "bad", "warn"), pv}
	var l logs
	if err := w.Write(l.ctx(), vs, t0); err != nil {
		t.Fatal(err)
	}
	got := reports(t, c)
	if len(got) != 3 {
		t.Fatalf("reports: %v", keysU(got))
	}
	a := got["PolicyReport team-a/pipeguard"]
	if a == nil || a.GetLabels()[ManagedByLabel] != ManagedBy {
		t.Fatalf("team-a report %v lacks the label %s=%s", a, ManagedByLabel, ManagedBy)
	}
	if fail, _, _ := unstructured.NestedInt64(a.Object, "summary", "fail"); fail != 1 {
		t.Errorf("team-a summary.fail = %d, want 1", fail)
	}
	res, _, _ := unstructured.NestedSlice(a.Object, "results")
	if len(res) != 1 || res[0].(map[string]any)["result"] != "fail" || res[0].(map[string]any)["policy"] != "csi" {
		t.Errorf("team-a results %v", res)
	}
	if cl := got["ClusterPolicyReport pipeguard"]; cl == nil {
		t.Fatal("no ClusterPolicyReport for the PersistentVolume")
	}
	if n := l.count("writing the background audit"); n != 1 {
		t.Errorf("logged %d times that reports are written, want once", n)
	}

	// Someone labels a report; the same violations an hour later write
	// nothing.
	a.SetLabels(map[string]string{ManagedByLabel: ManagedBy, "team": "a"})
	if err := c.Update(context.Background(), a); err != nil {
		t.Fatal(err)
	}
	updates = 0
	rv := map[string]string{}
	for k, u := range reports(t, c) {
		rv[k] = u.GetResourceVersion()
	}
	if err := w.Write(l.ctx(), vs, t0.Add(59*60e9)); err != nil {
		t.Fatal(err)
	}
	for k, u := range reports(t, c) {
		if rv[k] != u.GetResourceVersion() {
			t.Errorf("%s rewritten though its violations did not change", k)
		}
	}
	if updates != 0 {
		t.Errorf("%d updates for unchanged violations", updates)
	}

	// team-b's violation turns to deny; team-a's is gone; the PV is gone.
	if err := w.Write(l.ctx(), []Violation{podViolation("team-b", "bad", "deny")}, t0.Add(2*60e9)); err != nil {
		t.Fatal(err)
	}
	got = reports(t, c)
	if len(got) != 1 || got["PolicyReport team-b/pipeguard"] == nil {
		t.Fatalf("after team-a's and the PV's violations went: reports %v, want team-b's only", keysU(got))
	}
	res, _, _ = unstructured.NestedSlice(got["PolicyReport team-b/pipeguard"].Object, "results")
	if len(res) != 1 || res[0].(map[string]any)["result"] != "fail" {
		t.Errorf("team-b results after the change to deny: %v", res)
	}

	// Nothing violates any more: no report is left.
	if err := w.Write(l.ctx(), nil, t0.Add(3*60e9)); err != nil {
		t.Fatal(err)
	}
	if got := reports(t, c); len(got) != 0 {
		t.Errorf("reports left with no violations: %v", keysU(got))
	}
}

func keysU(m map[string]*unstructured.Unstructured) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

// TestWriterLeavesOthersAlone: reports without pipeguard's label are
// never updated or deleted, even when named pipeguard; the error says
// what to do.
func TestWriterLeavesOthersAlone(t *testing.T) {
	theirs := &unstructured.Unstructured{}
	theirs.SetGroupVersionKind(GroupVersion.WithKind(KindPolicyReport))
	theirs.SetNamespace("team-a")
	theirs.SetName(ReportName)
	kyverno := &unstructured.Unstructured{}
	kyverno.SetGroupVersionKind(GroupVersion.WithKind(KindPolicyReport))
	kyverno.SetNamespace("team-b")
	kyverno.SetName("cpol-require-labels")
	kyverno.SetLabels(map[string]string{ManagedByLabel: "kyverno"})
	c := fakeClient(t, nil, theirs, kyverno)
	w := newWriter(t, c, &discovery{kinds: []string{KindPolicyReport, KindClusterPolicyReport}}, Limits{})
	err := w.Write(context.Background(), []Violation{podViolation("team-a", "bad", "deny"), podViolation("team-c", "bad", "deny")}, t0)
	if err == nil || !strings.Contains(err.Error(), "PolicyReport team-a/pipeguard") || !strings.Contains(err.Error(), "without the label app.kubernetes.io/managed-by=pipeguard") {
		t.Errorf("Write over a report that is not pipeguard's: %v", err)
	}
	got := reports(t, c)
	if got["PolicyReport team-c/pipeguard"] == nil {
		t.Error("a failure in one namespace stopped the writes in another")
	}
	if u := got["PolicyReport team-a/pipeguard"]; u == nil || u.Object["results"] != nil {
		t.Errorf("a report that is not pipeguard's was changed: %v", u)
	}
	if got["PolicyReport team-b/cpol-require-labels"] == nil {
		t.Error("Kyverno's report was deleted")
	}
	if err := w.Write(context.Background(), nil, t0); err != nil {
		t.Fatal(err)
	}
	if got := reports(t, c); len(got) != 2 {
		t.Errorf("with no violations, pipeguard removed reports that are not its own, or kept its own: %v", keysU(got))
	}
}

// TestWriterForbidden: the CRDs are there but the RBAC is not: nothing is
// written, the pass does not fail, and the log says, once, what to apply.
func TestWriterForbidden(t *testing.T) {
	c := fakeClient(t, &interceptor.Funcs{
		List: func(ctx context.Context, c client.WithWatch, list client.ObjectList, opts ...client.ListOption) error {
			return apierrors.NewForbidden(schema.GroupResource{Group: GroupVersion.Group, Resource: "policyreports"}, "", errors.New("RBAC: access denied"))
		},
	})
	w := newWriter(t, c, &discovery{kinds: []string{KindPolicyReport, KindClusterPolicyReport}}, Limits{})
	var l logs
	for range 2 {
		if err := w.Write(l.ctx(), []Violation{podViolation("team-a", "bad", "deny")}, t0); err != nil {
			t.Fatalf("Write without RBAC: %v", err)
		}
	}
	if n := l.count("apply config/policyreport/rbac"); n != 1 {
		t.Errorf("logged the missing RBAC %d times in 2 passes, want once: %q", n, l.lines)
	}
}

// TestWriterCapAnnotation: a capped report says how many results it left
// out; the annotation goes once the cap no longer bites.
func TestWriterCapAnnotation(t *testing.T) {
	c := fakeClient(t, nil)
	w := newWriter(t, c, &discovery{kinds: []string{KindPolicyReport, KindClusterPolicyReport}}, Limits{Results: 1})
	vs := []Violation{podViolation("team-a", "x", "deny"), podViolation("team-a", "y", "deny"), podViolation("team-a", "z", "warn")}
	if err := w.Write(context.Background(), vs, t0); err != nil {
		t.Fatal(err)
	}
	u := reports(t, c)["PolicyReport team-a/pipeguard"]
	res, _, _ := unstructured.NestedSlice(u.Object, "results")
	sum, _, _ := unstructured.NestedMap(u.Object, "summary")
	if got := u.GetAnnotations()[OmittedAnnotation]; got != "2" || len(res) != 1 || sum["fail"] != int64(2) || sum["warn"] != int64(1) {
		t.Errorf("capped report: annotation %q, %d results, summary %v; want \"2\", 1, fail 2 warn 1", got, len(res), sum)
	}
	if err := w.Write(context.Background(), vs[:1], t0); err != nil {
		t.Fatal(err)
	}
	u = reports(t, c)["PolicyReport team-a/pipeguard"]
	if _, ok := u.GetAnnotations()[OmittedAnnotation]; ok {
		t.Errorf("annotation %s kept after the cap stopped biting", OmittedAnnotation)
	}
}

// TestWriterRestoresTamperedReports: whoever may write reports in a
// namespace can edit or delete pipeguard's there, but not for longer than
// one pass: an emptied report gets its results back, a deleted one is
// created again, and a forged result is dropped.
func TestWriterRestoresTamperedReports(t *testing.T) {
	c := fakeClient(t, nil)
	d := &discovery{kinds: []string{KindPolicyReport, KindClusterPolicyReport}}
	w := newWriter(t, c, d, Limits{})
	vs := []Violation{podViolation("team-a", "bad", "deny"), podViolation("team-b", "bad", "deny")}
	var l logs
	if err := w.Write(l.ctx(), vs, t0); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	got := reports(t, c)
	a := got["PolicyReport team-a/pipeguard"]
	if err := unstructured.SetNestedSlice(a.Object, []any{map[string]any{"policy": "csi", "rule": "forged", "result": "pass", "source": "pipeguard"}}, "results"); err != nil {
		t.Fatal(err)
	}
	if err := unstructured.SetNestedField(a.Object, int64(0), "summary", "fail"); err != nil {
		t.Fatal(err)
	}
	if err := c.Update(ctx, a); err != nil {
		t.Fatal(err)
	}
	if err := c.Delete(ctx, got["PolicyReport team-b/pipeguard"]); err != nil {
		t.Fatal(err)
	}

	if err := w.Write(l.ctx(), vs, t0.Add(60e9)); err != nil {
		t.Fatal(err)
	}
	got = reports(t, c)
	for _, ns := range []string{"team-a", "team-b"} {
		r := got["PolicyReport "+ns+"/pipeguard"]
		if r == nil {
			t.Fatalf("the %s report was not restored: reports %v", ns, keysU(got))
		}
		res, _, _ := unstructured.NestedSlice(r.Object, "results")
		fail, _, _ := unstructured.NestedInt64(r.Object, "summary", "fail")
		if len(res) != 1 || res[0].(map[string]any)["rule"] != "protected-pipe-mount" || res[0].(map[string]any)["result"] != "fail" || fail != 1 {
			t.Errorf("%s report after the pass: results %v, summary.fail %d; want the one violation, fail 1", ns, res, fail)
		}
	}
}

// TestWriterOpenReportsSource: an openreports.io report says source
// pipeguard at its top, and gets it back after an edit; the PolicyReports
// next to it hold the same results.
func TestWriterOpenReportsSource(t *testing.T) {
	c := fakeClient(t, nil)
	d := &discovery{kinds: []string{KindPolicyReport, KindClusterPolicyReport}, open: []string{KindReport, KindClusterReport}}
	w := newWriter(t, c, d, Limits{})
	vs := []Violation{podViolation("team-a", "bad", "deny")}
	if err := w.Write(context.Background(), vs, t0); err != nil {
		t.Fatal(err)
	}
	get := func() *unstructured.Unstructured {
		u := &unstructured.Unstructured{}
		u.SetGroupVersionKind(OpenReportsGroupVersion.WithKind(KindReport))
		if err := c.Get(context.Background(), client.ObjectKey{Namespace: "team-a", Name: ReportName}, u); err != nil {
			t.Fatal(err)
		}
		return u
	}
	u := get()
	if u.Object["source"] != "pipeguard" {
		t.Fatalf("Report team-a/pipeguard has source %v, want pipeguard", u.Object["source"])
	}
	if got, want := u.Object["results"], reports(t, c)["PolicyReport team-a/pipeguard"].Object["results"]; !reflect.DeepEqual(got, want) {
		t.Errorf("the Report's results %v differ from the PolicyReport's %v", got, want)
	}
	u.Object["source"] = "someone-else"
	if err := c.Update(context.Background(), u); err != nil {
		t.Fatal(err)
	}
	if err := w.Write(context.Background(), vs, t0.Add(60e9)); err != nil {
		t.Fatal(err)
	}
	if got := get().Object["source"]; got != "pipeguard" {
		t.Errorf("after an edit and a pass, source %v, want pipeguard", got)
	}
}
