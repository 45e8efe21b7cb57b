package policyreport

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	clientdiscovery "k8s.io/client-go/discovery"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/pipeguard/pipeguard/internal/testing/testenv"
)

// webhookSA is the user pipeguard-webhook runs as under config/default.
const webhookSA = "system:serviceaccount:pipeguard-system:pipeguard-webhook"

// apiServer is a control plane for the writer, without any report CRD
// until a test installs them.
type apiServer struct {
	env   *testenv.Env
	admin client.Client // knows CRDs and RBAC
}

func startAPIServer(t *testing.T, crds ...API) apiServer {
	t.Helper()
	s := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{clientgoscheme.AddToScheme, apiextensionsv1.AddToScheme} {
		if err := add(s); err != nil {
			t.Fatal(err)
		}
	}
	var dirs []string
	for _, api := range crds {
		dirs = append(dirs, crdDirs[api.GroupVersion.Group])
	}
	env := testenv.Start(t, testenv.Options{Scheme: s, CRDDirectoryPaths: dirs})
	for _, ns := range []string{"team-a", "team-b"} {
		if err := env.Client.Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
			t.Fatal(err)
		}
	}
	return apiServer{env: env, admin: env.Client}
}

// writerAs returns a writer that reaches the API server with cfg, as
// pipeguard-webhook does: an uncached client and a discovery client.
func writerAs(t *testing.T, cfg *rest.Config) *Writer {
	t.Helper()
	c, err := client.New(cfg, client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	d, err := clientdiscovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return newWriter(t, c, d, Limits{})
}

// crdsOf reads the CRDs that config/policyreport keeps for api.
func crdsOf(t *testing.T, api API) []*apiextensionsv1.CustomResourceDefinition {
	t.Helper()
	return testenv.ReadCRDs(t, crdDirs[api.GroupVersion.Group], 2)
}

// served waits until discovery serves both kinds of api (want) or none.
func (s apiServer) served(t *testing.T, api API, want bool) {
	t.Helper()
	d, err := clientdiscovery.NewDiscoveryClientForConfig(s.env.Config)
	if err != nil {
		t.Fatal(err)
	}
	if err := wait.PollUntilContextTimeout(context.Background(), 100*time.Millisecond, time.Minute, true, func(context.Context) (bool, error) {
		w := &Writer{opts: Options{Discovery: d}}
		missing, err := w.missingKinds(api)
		if err != nil {
			return false, nil
		}
		return (len(missing) == 0) == want && (want || len(missing) == 2), nil
	}); err != nil {
		t.Fatalf("discovery of %s never became served=%v: %v", api.GroupVersion, want, err)
	}
}

// install creates the CRDs of api, as applying its directory of
// config/policyreport does, and waits until they are served.
func (s apiServer) install(t *testing.T, api API) {
	t.Helper()
	for _, crd := range crdsOf(t, api) {
		if err := s.admin.Create(context.Background(), crd); err != nil {
			t.Fatal(err)
		}
	}
	s.served(t, api, true)
}

// uninstall deletes the CRDs of api, and with them every report of api.
func (s apiServer) uninstall(t *testing.T, api API) {
	t.Helper()
	for _, crd := range crdsOf(t, api) {
		if err := s.admin.Delete(context.Background(), crd); err != nil {
			t.Fatal(err)
		}
	}
	s.served(t, api, false)
}

// stored returns the reports of api by "Kind namespace/name"; none when
// the API server does not serve api.
func (s apiServer) stored(t *testing.T, api API) map[string]*unstructured.Unstructured {
	t.Helper()
	out := map[string]*unstructured.Unstructured{}
	for _, kind := range api.Kinds() {
		l := &unstructured.UnstructuredList{}
		l.SetGroupVersionKind(api.GroupVersion.WithKind(kind + "List"))
		err := s.admin.List(context.Background(), l)
		if apierrors.IsNotFound(err) || meta.IsNoMatchError(err) {
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		for i := range l.Items {
			u := &l.Items[i]
			out[describe(kind, u.GetNamespace(), u.GetName())] = u
		}
	}
	return out
}

// content is the part of a stored report that must be the same in every
// API: summary, results, the omitted annotation.
func contentOf(t *testing.T, u *unstructured.Unstructured) string {
	t.Helper()
	b, err := json.Marshal(map[string]any{"summary": u.Object["summary"], "results": u.Object["results"], "omitted": u.GetAnnotations()[OmittedAnnotation]})
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

var pvViolation = Violation{APIVersion: "v1", Kind: "PersistentVolume", Name: "pipe-pv", UID: "uid-pv", Policy: "pipeguard-default",
	Rule: "protected-pipe-pv", Action: "deny", Message: "m", Pipe: "csi-proxy-disk-v1"}

// wantReports checks that api holds exactly pipeguard's reports for
// team-a (one fail) and the cluster (one fail), labelled, with the
// top-level source where api has one.
func wantReports(t *testing.T, s apiServer, api API, where string) map[string]*unstructured.Unstructured {
	t.Helper()
	got := s.stored(t, api)
	ns, cl := describe(api.Namespaced, "team-a", ReportName), describe(api.Cluster, "", ReportName)
	if len(got) != 2 || got[ns] == nil || got[cl] == nil {
		t.Fatalf("%s: %s reports %v, want %s and %s", where, api.GroupVersion, keysU(got), ns, cl)
	}
	for k, u := range got {
		if u.GetLabels()[ManagedByLabel] != ManagedBy {
			t.Errorf("%s: %s lacks the label %s=%s", where, k, ManagedByLabel, ManagedBy)
		}
		if src, _ := u.Object["source"].(string); src != api.ReportSource {
			t.Errorf("%s: %s has source %q, want %q", where, k, src, api.ReportSource)
		}
		res, _, _ := unstructured.NestedSlice(u.Object, "results")
		fail, _, _ := unstructured.NestedInt64(u.Object, "summary", "fail")
		if len(res) != 1 || fail != 1 || res[0].(map[string]any)["result"] != "fail" || res[0].(map[string]any)["source"] != Source {
			t.Errorf("%s: %s results %v, summary.fail %d; want one fail result from pipeguard", where, k, res, fail)
		}
	}
	return got
}

// TestWriterOnAPIServer: on a real API server, the writer writes to each
// report API that is installed, the same results in each, and cleans
// each up; an API that is missing writes nothing, fails nothing, and is
// logged once each time that changes.
func TestWriterOnAPIServer(t *testing.T) {
	s := startAPIServer(t)
	w := writerAs(t, s.env.Config)
	var l logs
	vs := []Violation{podViolation("team-a", "bad", "deny"), pvViolation}
	write := func(vs []Violation, at time.Time) {
		t.Helper()
		if err := w.Write(l.ctx(), vs, at); err != nil {
			t.Fatalf("Write: %v", err)
		}
	}
	const (
		wgAbsent   = "not writing PolicyReports: the API server does not serve them; install config/policyreport to get them"
		openAbsent = "not writing openreports.io Reports: the API server does not serve them; install config/policyreport/openreports to get them"
		wgWriting  = "writing the background audit's violations as PolicyReports"
		openWrites = "writing the background audit's violations as openreports.io Reports"
	)
	wantLogs := func(where string, want map[string]int) {
		t.Helper()
		for msg, n := range want {
			if got := l.count(msg); got != n {
				t.Errorf("%s: logged %q %d times, want %d:\n%s", where, msg, got, n, strings.Join(l.lines, "\n"))
			}
		}
	}

	t.Run("neither", func(t *testing.T) {
		write(vs, t0)
		write(vs, t0.Add(time.Minute))
		if got := len(s.stored(t, WGPolicy())) + len(s.stored(t, OpenReports())); got != 0 {
			t.Errorf("%d reports written without any report CRD", got)
		}
		wantLogs("without CRDs, two passes", map[string]int{wgAbsent: 1, openAbsent: 1, wgWriting: 0, openWrites: 0})
	})

	t.Run("only openreports.io", func(t *testing.T) {
		s.install(t, OpenReports())
		write(vs, t0.Add(2*time.Minute))
		wantReports(t, s, OpenReports(), "openreports.io only")
		if got := s.stored(t, WGPolicy()); len(got) != 0 {
			t.Errorf("wgpolicyk8s.io reports %v without its CRDs", keysU(got))
		}
		wantLogs("openreports.io installed", map[string]int{wgAbsent: 1, openAbsent: 1, openWrites: 1})
	})

	var both map[string]*unstructured.Unstructured
	t.Run("both, the same results in each", func(t *testing.T) {
		s.install(t, WGPolicy())
		write(vs, t0.Add(3*time.Minute))
		wg := wantReports(t, s, WGPolicy(), "both")
		open := wantReports(t, s, OpenReports(), "both")
		pairs := map[string]string{
			describe(KindPolicyReport, "team-a", ReportName):  describe(KindReport, "team-a", ReportName),
			describe(KindClusterPolicyReport, "", ReportName): describe(KindClusterReport, "", ReportName),
		}
		for a, b := range pairs {
			if ca, cb := contentOf(t, wg[a]), contentOf(t, open[b]); ca != cb {
				t.Errorf("%s and %s differ:\n%s\n%s", a, b, ca, cb)
			}
		}
		// The openreports.io results were found first: the PolicyReports
		// say so too.
		res, _, _ := unstructured.NestedSlice(wg[describe(KindPolicyReport, "team-a", ReportName)].Object, "results")
		if ts, _, _ := unstructured.NestedInt64(res[0].(map[string]any), "timestamp", "seconds"); ts != t0.Add(2*time.Minute).Unix() {
			t.Errorf("PolicyReport result timestamp %d, want when the violation was first reported, %d", ts, t0.Add(2*time.Minute).Unix())
		}
		// The same violations again: nothing is rewritten, in either.
		both = map[string]*unstructured.Unstructured{}
		for _, api := range APIs() {
			for k, u := range s.stored(t, api) {
				both[k] = u
			}
		}
		write(vs, t0.Add(4*time.Minute))
		for _, api := range APIs() {
			for k, u := range s.stored(t, api) {
				if both[k].GetResourceVersion() != u.GetResourceVersion() {
					t.Errorf("%s rewritten though nothing changed", k)
				}
			}
		}
		wantLogs("both installed", map[string]int{wgAbsent: 1, openAbsent: 1, wgWriting: 1, openWrites: 1})
	})

	t.Run("both cleaned up when the violations go", func(t *testing.T) {
		write([]Violation{pvViolation}, t0.Add(5*time.Minute))
		for _, api := range APIs() {
			got := s.stored(t, api)
			if len(got) != 1 || got[describe(api.Cluster, "", ReportName)] == nil {
				t.Errorf("%s after team-a's violation went: %v, want the cluster report only", api.GroupVersion, keysU(got))
			}
		}
		write(nil, t0.Add(6*time.Minute))
		for _, api := range APIs() {
			if got := s.stored(t, api); len(got) != 0 {
				t.Errorf("%s reports left with no violations: %v", api.GroupVersion, keysU(got))
			}
		}
	})

	t.Run("only wgpolicyk8s.io", func(t *testing.T) {
		s.uninstall(t, OpenReports())
		write(vs, t0.Add(7*time.Minute))
		wantReports(t, s, WGPolicy(), "wgpolicyk8s.io only")
		// The openreports.io CRDs went: said once more, as a change.
		wantLogs("openreports.io uninstalled", map[string]int{wgAbsent: 1, openAbsent: 2, wgWriting: 1, openWrites: 1})
		write(vs, t0.Add(8*time.Minute))
		wantLogs("openreports.io uninstalled, another pass", map[string]int{openAbsent: 2})
	})
}

// TestWriterOneGroupForbidden: as pipeguard-webhook's ServiceAccount,
// allowed to write openreports.io reports but not wgpolicyk8s.io ones, the
// writer writes the Reports, says once what to apply for the others, and
// does not fail the pass; once config/policyreport/rbac is applied, it
// writes both.
func TestWriterOneGroupForbidden(t *testing.T) {
	s := startAPIServer(t, WGPolicy(), OpenReports())
	ctx := context.Background()
	role := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "openreports-only"}, Rules: []rbacv1.PolicyRule{{
		APIGroups: []string{OpenReportsGroupVersion.Group}, Resources: []string{"reports", "clusterreports"},
		Verbs: []string{"get", "list", "watch", "create", "update", "patch", "delete"},
	}}}
	binding := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "openreports-only"},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role.Name},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: "pipeguard-system", Name: "pipeguard-webhook"}}}
	for _, o := range []client.Object{role, binding} {
		if err := s.admin.Create(ctx, o); err != nil {
			t.Fatal(err)
		}
	}
	sa := rest.CopyConfig(s.env.Config)
	sa.Impersonate = rest.ImpersonationConfig{UserName: webhookSA}
	w := writerAs(t, sa)
	// RBAC takes effect through the authorizer's informers: wait until
	// the ServiceAccount may list Reports.
	asSA, err := client.New(sa, client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, time.Minute, true, func(context.Context) (bool, error) {
		l := &unstructured.UnstructuredList{}
		l.SetGroupVersionKind(OpenReportsGroupVersion.WithKind(KindReport + "List"))
		return asSA.List(ctx, l) == nil, nil
	}); err != nil {
		t.Fatalf("the ServiceAccount never got to list Reports: %v", err)
	}
	vs := []Violation{podViolation("team-a", "bad", "deny"), pvViolation}
	var l logs
	const forbidden = "not writing PolicyReports: the report CRDs are installed but pipeguard-webhook may not list them; apply config/policyreport/rbac"
	if err := w.Write(l.ctx(), vs, t0); err != nil {
		t.Fatalf("Write with one group forbidden: %v", err)
	}
	wantReports(t, s, OpenReports(), "wgpolicyk8s.io forbidden")
	if got := s.stored(t, WGPolicy()); len(got) != 0 {
		t.Errorf("PolicyReports %v written without the RBAC for them", keysU(got))
	}
	if err := w.Write(l.ctx(), vs, t0); err != nil {
		t.Fatal(err)
	}
	if n := l.count(forbidden); n != 1 {
		t.Errorf("logged the missing RBAC %d times, want once:\n%s", n, strings.Join(l.lines, "\n"))
	}
	if n := l.count("openreports.io Reports: the report CRDs are installed but"); n != 0 {
		t.Errorf("logged openreports.io as forbidden though it is allowed:\n%s", strings.Join(l.lines, "\n"))
	}

	// Apply config/policyreport/rbac as an administrator.
	testenv.CreateFromFile(ctx, t, s.admin, "../../config/policyreport/rbac/role.yaml")
	if err := s.admin.Delete(ctx, binding); err != nil {
		t.Fatal(err)
	}
	if err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, time.Minute, true, func(context.Context) (bool, error) {
		if err := w.Write(l.ctx(), vs, t0.Add(time.Minute)); err != nil {
			return false, err
		}
		return len(s.stored(t, WGPolicy())) == 2, nil
	}); err != nil {
		t.Fatalf("with config/policyreport/rbac the writer never wrote the PolicyReports: %v", err)
	}
	wantReports(t, s, WGPolicy(), "with config/policyreport/rbac")
	wantReports(t, s, OpenReports(), "with config/policyreport/rbac")
	if n := l.count("writing the background audit's violations as PolicyReports"); n != 1 {
		t.Errorf("logged %d times that PolicyReports are written, want once", n)
	}
	// With config/policyreport/rbac alone, pipeguard deletes both groups'
	// reports once their violations go.
	if err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, time.Minute, true, func(context.Context) (bool, error) {
		if err := w.Write(l.ctx(), nil, t0.Add(2*time.Minute)); err != nil {
			return false, err
		}
		return len(s.stored(t, WGPolicy()))+len(s.stored(t, OpenReports())) == 0, nil
	}); err != nil {
		t.Fatalf("with config/policyreport/rbac alone the writer never deleted the reports: %v", err)
	}
}
