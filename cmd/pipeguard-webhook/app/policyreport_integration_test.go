package app_test

import (
	"context"
	"net/http"
	"reflect"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/testr"
	"github.com/prometheus/client_golang/prometheus"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/rest"
	kptr "k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/pipeguard/pipeguard/api/v1alpha1"
	"github.com/pipeguard/pipeguard/cmd/pipeguard-webhook/app"
	"github.com/pipeguard/pipeguard/controller"
	"github.com/pipeguard/pipeguard/controller/policyreport"
	"github.com/pipeguard/pipeguard/internal/testing/testenv"
	"github.com/pipeguard/pipeguard/policy"
)

// policyReportCRDs is where config/policyreport keeps the CRDs.
const policyReportCRDs = "../../../config/policyreport/crds"

// reportEnv is a control plane with pipeguard-webhook running on it.
type reportEnv struct {
	c   client.Client
	cfg *rest.Config
	reg *prometheus.Registry
	app *app.App
	log *recordingLog
}

// startReports starts a control plane, with the PolicyReport CRDs of
// config/policyreport when crds is true, lets setup create objects while
// no webhook is registered, then starts pipeguard-webhook.
func startReports(t *testing.T, interval time.Duration, crds bool, setup func(c client.Client), mutate func(*app.Options)) reportEnv {
	t.Helper()
	opts := testenv.Options{Scheme: scheme(t), CRDDirectoryPaths: []string{"../../../config/crd/bases"}}
	if crds {
		opts.CRDs = loadReportCRDs(t)
	}
	rec := &recordingLog{}
	env, registry, a := startWebhookOn(t, opts, interval, logr.New(rec.sink(testr.New(t).GetSink())), setup, mutate)
	return reportEnv{c: env.Client, cfg: env.Config, reg: registry, app: a, log: rec}
}

// loadReportCRDs reads the CRDs of config/policyreport.
func loadReportCRDs(t *testing.T) []*apiextensionsv1.CustomResourceDefinition {
	t.Helper()
	return testenv.ReadCRDs(t, policyReportCRDs, 2)
}

// recordingLog passes log lines on and keeps the errors and messages.
type recordingLog struct {
	mu     sync.Mutex
	errors []string
	infos  []string
}

func (r *recordingLog) sink(next logr.LogSink) logr.LogSink {
	return recordingSink{LogSink: next, rec: r}
}

func (r *recordingLog) errorLines() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.errors)
}

func (r *recordingLog) infoCount(sub string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for _, s := range r.infos {
		if strings.Contains(s, sub) {
			n++
		}
	}
	return n
}

type recordingSink struct {
	logr.LogSink
	rec  *recordingLog
	name string
}

func (s recordingSink) Info(level int, msg string, kv ...any) {
	s.rec.mu.Lock()
	s.rec.infos = append(s.rec.infos, s.name+": "+msg)
	s.rec.mu.Unlock()
	s.LogSink.Info(level, msg, kv...)
}

func (s recordingSink) Error(err error, msg string, kv ...any) {
	s.rec.mu.Lock()
	s.rec.errors = append(s.rec.errors, s.name+": "+msg+": "+err.Error())
	s.rec.mu.Unlock()
	s.LogSink.Error(err, msg, kv...)
}

func (s recordingSink) WithName(name string) logr.LogSink {
	s.LogSink = s.LogSink.WithName(name)
	s.name += "/" + name
	return s
}

func (s recordingSink) WithValues(kv ...any) logr.LogSink {
	s.LogSink = s.LogSink.WithValues(kv...)
	return s
}

// storedReport is a PolicyReport or ClusterPolicyReport (a Report or
// ClusterReport) as stored.
type storedReport struct {
	Kind     string                `json:"kind"`
	Metadata metav1.ObjectMeta     `json:"metadata"`
	Source   string                `json:"source"`
	Summary  policyreport.Summary  `json:"summary"`
	Results  []policyreport.Result `json:"results"`
}

// listReports returns every wgpolicyk8s.io report of both kinds, whoever
// wrote it, by namespace ("" for the ClusterPolicyReports).
func listReports(ctx context.Context, c client.Client) (map[string][]storedReport, error) {
	return listReportsOf(ctx, c, policyreport.WGPolicy())
}

// listReportsOf returns every report of api, of both kinds, by namespace.
func listReportsOf(ctx context.Context, c client.Client, api policyreport.API) (map[string][]storedReport, error) {
	out := map[string][]storedReport{}
	for _, kind := range api.Kinds() {
		l := &unstructured.UnstructuredList{}
		l.SetGroupVersionKind(api.GroupVersion.WithKind(kind + "List"))
		if err := c.List(ctx, l); err != nil {
			return nil, err
		}
		for _, u := range l.Items {
			var r storedReport
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &r); err != nil {
				return nil, err
			}
			r.Kind = kind
			out[u.GetNamespace()] = append(out[u.GetNamespace()], r)
		}
	}
	return out, nil
}

// pollReports waits until the stored wgpolicyk8s.io reports satisfy ok.
func pollReports(t *testing.T, c client.Client, what string, ok func(map[string][]storedReport) bool) map[string][]storedReport {
	t.Helper()
	return pollReportsOf(t, c, policyreport.WGPolicy(), what, ok)
}

// pollReportsOf waits until the stored reports of api satisfy ok.
func pollReportsOf(t *testing.T, c client.Client, api policyreport.API, what string, ok func(map[string][]storedReport) bool) map[string][]storedReport {
	t.Helper()
	var got map[string][]storedReport
	err := wait.PollUntilContextTimeout(context.Background(), 100*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		var err error
		got, err = listReportsOf(ctx, c, api)
		return err == nil && ok(got), nil
	})
	if err != nil {
		t.Fatalf("%s: the reports never did: %v; last seen: %s", what, err, describeReports(got))
	}
	return got
}

func describeReports(m map[string][]storedReport) string {
	var b strings.Builder
	for ns, rs := range m {
		for _, r := range rs {
			b.WriteString("\n" + r.Kind + " " + ns + "/" + r.Metadata.Name + ":")
			for _, res := range r.Results {
				b.WriteString("\n  " + res.Policy + " " + res.Rule + " " + res.Result + " " + res.Resources[0].Kind + " " + res.Resources[0].Name + ": " + res.Message)
			}
		}
	}
	return b.String()
}

// onlyReport returns the one report of namespace ns, or nil.
func onlyReport(m map[string][]storedReport, ns string) *storedReport {
	if len(m[ns]) != 1 {
		return nil
	}
	return &m[ns][0]
}

// wantResult checks one result in full.
func wantResult(t *testing.T, where string, got policyreport.Result, pol, rule, result, action, msgStart string, ref policyreport.ObjectReference, container, pipe string) {
	t.Helper()
	if got.Source != "pipeguard" || got.Policy != pol || got.Rule != rule || got.Result != result || got.Category != "Pipe access" || got.Severity != "high" {
		t.Errorf("%s: source %q policy %q rule %q result %q category %q severity %q; want pipeguard %s %s %s \"Pipe access\" high",
			where, got.Source, got.Policy, got.Rule, got.Result, got.Category, got.Severity, pol, rule, result)
	}
	if !strings.HasPrefix(got.Message, msgStart) {
		t.Errorf("%s: message %q\nwant it to start with %q", where, got.Message, msgStart)
	}
	if len(got.Resources) != 1 || got.Resources[0] != ref {
		t.Errorf("%s: resources %+v, want [%+v]", where, got.Resources, ref)
	}
	props := map[string]string{"action": action, "pipe": pipe}
	if container != "" {
		props["container"] = container
	}
	if !equalMaps(got.Properties, props) {
		t.Errorf("%s: properties %v, want %v", where, got.Properties, props)
	}
	if got.Timestamp.Seconds < time.Now().Add(-time.Hour).Unix() {
		t.Errorf("%s: timestamp %+v is not the audit's time", where, got.Timestamp)
	}
}

func equalMaps(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if bv, ok := b[k]; !ok || bv != v {
			return false
		}
	}
	return true
}

func pipePV(name, path string) *corev1.PersistentVolume {
	return &corev1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: corev1.PersistentVolumeSpec{
		Capacity:               corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")},
		AccessModes:            []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
		PersistentVolumeSource: corev1.PersistentVolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: path}},
	}}
}

func ref(kind, ns, name string, uid types.UID) policyreport.ObjectReference {
	return policyreport.ObjectReference{APIVersion: "v1", Kind: kind, Namespace: ns, Name: name, UID: uid}
}

// touchNamespace changes a label of ns that no policy reads; a namespace
// label change triggers an audit pass.
func touchNamespace(t *testing.T, c client.Client, ns string) {
	t.Helper()
	if err := touch(c, ns); err != nil {
		t.Fatal(err)
	}
}

func touch(c client.Client, ns string) error {
	var n corev1.Namespace
	if err := c.Get(context.Background(), client.ObjectKey{Name: ns}, &n); err != nil {
		return err
	}
	if n.Labels == nil {
		n.Labels = map[string]string{}
	}
	n.Labels["touched"] = time.Now().Format("150405.000000")
	return c.Update(context.Background(), &n)
}

// TestPolicyReports: objects created before the webhook is registered
// appear, only the violating ones, in a PolicyReport per namespace and the
// ClusterPolicyReport after the pass at start (the interval is an hour),
// in the v1alpha2 format that passes the CRDs of config/policyreport;
// the built-in default's violations included. Each change (a policy, a
// namespace's labels, a deleted workload) updates or deletes the reports.
func TestPolicyReports(t *testing.T) {
	var badA, badB, pv client.Object
	e := startReports(t, time.Hour, true, func(c client.Client) {
		priv := hostProcessPipePod("hostprocess", "team-a")
		plain := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "plain", Namespace: "team-b"},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "busybox"}}}}
		badA, badB, pv = pipePod("bad", "team-a"), pipePod("worker", "team-b"), pipePV("pipe-pv", diskPipe)
		mustCreate(t, c,
			&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "team-a"}},
			&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "team-b"}},
			&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "team-c"}},
			badA, priv, badB, plain, pv, pipePV("data-pv", `C:\data`),
		)
	}, func(*app.Options) {})
	c := e.c
	ctx := context.Background()
	notAllowed := func(ns string) string {
		return `container "driver" mounts \\.\pipe\csi-proxy-disk-v1 through volume "pipe", but it is not HostProcess and namespace "` + ns + `" is not allowed`
	}
	const pvMsg = `PersistentVolume "pipe-pv" points at \\.\pipe\csi-proxy-disk-v1 (hostPath); a PersistentVolume cannot carry an allowance`

	t.Run("the built-in default's violations, only the violating objects", func(t *testing.T) {
		got := pollReports(t, c, "start", func(m map[string][]storedReport) bool {
			return len(m) == 3 && onlyReport(m, "team-a") != nil && onlyReport(m, "team-b") != nil && onlyReport(m, "") != nil
		})
		for _, ns := range []string{"team-a", "team-b", ""} {
			r := onlyReport(got, ns)
			kind := "PolicyReport"
			if ns == "" {
				kind = "ClusterPolicyReport"
			}
			if r.Kind != kind || r.Metadata.Name != "pipeguard" || r.Metadata.Namespace != ns || r.Metadata.Labels["app.kubernetes.io/managed-by"] != "pipeguard" {
				t.Errorf("report %s %s/%s labels %v; want %s pipeguard labelled app.kubernetes.io/managed-by=pipeguard", r.Kind, r.Metadata.Namespace, r.Metadata.Name, r.Metadata.Labels, kind)
			}
			if r.Summary != (policyreport.Summary{Fail: 1}) || len(r.Results) != 1 {
				t.Fatalf("namespace %q: summary %+v with %d results, want one fail:%s", ns, r.Summary, len(r.Results), describeReports(got))
			}
		}
		wantResult(t, "team-a", got["team-a"][0].Results[0], "pipeguard-default", "protected-pipe-mount", "fail", "deny",
			notAllowed("team-a"), ref("Pod", "team-a", "bad", badA.GetUID()), "driver", "csi-proxy-disk-v1")
		wantResult(t, "team-b", got["team-b"][0].Results[0], "pipeguard-default", "protected-pipe-mount", "fail", "deny",
			notAllowed("team-b"), ref("Pod", "team-b", "worker", badB.GetUID()), "driver", "csi-proxy-disk-v1")
		wantResult(t, "cluster", got[""][0].Results[0], "pipeguard-default", "protected-pipe-pv", "fail", "deny",
			pvMsg, ref("PersistentVolume", "", "pipe-pv", pv.GetUID()), "", "csi-proxy-disk-v1")
	})

	t.Run("a policy in force names itself in the results", func(t *testing.T) {
		mustCreate(t, c, storagePolicy(v1alpha1.Deny))
		got := pollReports(t, c, "after creating policy csi", func(m map[string][]storedReport) bool {
			r, cl := onlyReport(m, "team-a"), onlyReport(m, "")
			return r != nil && len(r.Results) == 1 && r.Results[0].Policy == "csi" && cl != nil && len(cl.Results) == 1 && cl.Results[0].Policy == "csi"
		})
		wantResult(t, "team-a", got["team-a"][0].Results[0], "csi", "protected-pipe-mount", "fail", "deny",
			notAllowed("team-a"), ref("Pod", "team-a", "bad", badA.GetUID()), "driver", "csi-proxy-disk-v1")
	})

	t.Run("labelling the namespace deletes its report, and only its", func(t *testing.T) {
		var ns corev1.Namespace
		if err := c.Get(ctx, client.ObjectKey{Name: "team-a"}, &ns); err != nil {
			t.Fatal(err)
		}
		ns.Labels = map[string]string{"pipeguard.io/team": "storage"}
		if err := c.Update(ctx, &ns); err != nil {
			t.Fatal(err)
		}
		got := pollReports(t, c, "after labelling team-a", func(m map[string][]storedReport) bool {
			return len(m["team-a"]) == 0
		})
		if onlyReport(got, "team-b") == nil || onlyReport(got, "") == nil {
			t.Errorf("the reports of team-b and the cluster went too:%s", describeReports(got))
		}
	})

	t.Run("a policy change to warn turns the results to warn", func(t *testing.T) {
		var p v1alpha1.PipeAccessPolicy
		if err := c.Get(ctx, client.ObjectKey{Name: "csi"}, &p); err != nil {
			t.Fatal(err)
		}
		p.Spec.EnforcementAction = v1alpha1.Warn
		if err := c.Update(ctx, &p); err != nil {
			t.Fatal(err)
		}
		got := pollReports(t, c, "after the policy turned to warn", func(m map[string][]storedReport) bool {
			b, cl := onlyReport(m, "team-b"), onlyReport(m, "")
			return b != nil && cl != nil && b.Summary == (policyreport.Summary{Warn: 1}) && cl.Summary == (policyreport.Summary{Warn: 1})
		})
		wantResult(t, "team-b", got["team-b"][0].Results[0], "csi", "protected-pipe-mount", "warn", "warn",
			notAllowed("team-b"), ref("Pod", "team-b", "worker", badB.GetUID()), "driver", "csi-proxy-disk-v1")
		wantResult(t, "cluster", got[""][0].Results[0], "csi", "protected-pipe-pv", "warn", "warn",
			pvMsg, ref("PersistentVolume", "", "pipe-pv", pv.GetUID()), "", "csi-proxy-disk-v1")
	})

	t.Run("an unchanged pass does not rewrite the reports", func(t *testing.T) {
		before, err := listReports(ctx, c)
		if err != nil {
			t.Fatal(err)
		}
		last := auditGauge(t, e.reg, "csi", "warn")
		since := lastRun(t, e.reg)
		touchNamespace(t, c, "team-c")
		// The pass ran and wrote once waitPass returns.
		waitPass(t, e, since)
		after, err := listReports(ctx, c)
		if err != nil {
			t.Fatal(err)
		}
		for ns, rs := range before {
			if len(after[ns]) != 1 || after[ns][0].Metadata.ResourceVersion != rs[0].Metadata.ResourceVersion {
				t.Errorf("namespace %q: report rewritten by a pass that found the same violations", ns)
			}
		}
		if last != 2 {
			t.Errorf("pipeguard_audit_violations{policy=csi,action=warn} = %v, want 2", last)
		}
	})

	t.Run("deleting the workload and the PersistentVolume deletes the reports", func(t *testing.T) {
		if err := c.Delete(ctx, pipePod("worker", "team-b"), client.GracePeriodSeconds(0)); err != nil {
			t.Fatal(err)
		}
		if err := c.Delete(ctx, pipePV("pipe-pv", diskPipe)); err != nil {
			t.Fatal(err)
		}
		// No controller manager runs here to lift the protection finalizer
		// the API server put on the PersistentVolume.
		var gone corev1.PersistentVolume
		if err := c.Get(ctx, client.ObjectKey{Name: "pipe-pv"}, &gone); err == nil && len(gone.Finalizers) > 0 {
			gone.Finalizers = nil
			if err := c.Update(ctx, &gone); err != nil {
				t.Fatal(err)
			}
		}
		// Deletions reach the audit's caches on their own time: trigger
		// passes until one has seen them.
		stop, done := make(chan struct{}), make(chan struct{})
		defer func() {
			close(stop)
			<-done
		}()
		go func() {
			defer close(done)
			for {
				if err := touch(c, "team-c"); err != nil {
					t.Errorf("changing a label of team-c: %v", err)
				}
				select {
				case <-stop:
					return
				case <-time.After(2 * time.Second):
				}
			}
		}()
		pollReports(t, c, "after the fixes", func(m map[string][]storedReport) bool { return len(m) == 0 })
	})

	if errs := e.log.errorLines(); len(errs) > 0 {
		t.Errorf("errors logged:\n%s", strings.Join(errs, "\n"))
	}
}

// TestOpenReports: with the CRDs of config/policyreport and of
// config/policyreport/openreports installed, pipeguard-webhook writes the
// same results as PolicyReports and as openreports.io Reports (these with
// source pipeguard), and removes a namespace's report from both once its
// violations are gone.
func TestOpenReports(t *testing.T) {
	var bad, pv client.Object
	opts := testenv.Options{Scheme: scheme(t), CRDDirectoryPaths: []string{"../../../config/crd/bases", "../../../config/policyreport/openreports/crds"}, CRDs: loadReportCRDs(t)}
	rec := &recordingLog{}
	env, _, _ := startWebhookOn(t, opts, time.Hour, logr.New(rec.sink(testr.New(t).GetSink())), func(c client.Client) {
		bad, pv = pipePod("bad", "team-a"), pipePV("pipe-pv", diskPipe)
		mustCreate(t, c,
			&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "team-a"}},
			&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "team-b"}},
			storagePolicy(v1alpha1.Deny), bad, pipePod("worker", "team-b"), pv,
		)
	}, func(*app.Options) {})
	c := env.Client
	ctx := context.Background()
	complete := func(m map[string][]storedReport) bool {
		for _, ns := range []string{"team-a", "team-b", ""} {
			if r := onlyReport(m, ns); r == nil || len(r.Results) != 1 || r.Results[0].Policy != "csi" {
				return false
			}
		}
		return len(m) == 3
	}
	open := pollReportsOf(t, c, policyreport.OpenReports(), "openreports.io at start", complete)
	wg := pollReports(t, c, "wgpolicyk8s.io at start", complete)
	for _, ns := range []string{"team-a", "team-b", ""} {
		o, w := onlyReport(open, ns), onlyReport(wg, ns)
		kind := map[string]string{"": "ClusterReport"}[ns]
		if kind == "" {
			kind = "Report"
		}
		if o.Kind != kind || o.Source != "pipeguard" || o.Metadata.Name != "pipeguard" || o.Metadata.Labels["app.kubernetes.io/managed-by"] != "pipeguard" {
			t.Errorf("namespace %q: %s %s, source %q, labels %v; want %s pipeguard, source pipeguard, labelled", ns, o.Kind, o.Metadata.Name, o.Source, o.Metadata.Labels, kind)
		}
		if !reflect.DeepEqual(o.Summary, w.Summary) || !reflect.DeepEqual(o.Results, w.Results) {
			t.Errorf("namespace %q: the Report holds other results than the PolicyReport:\n%+v\n%+v", ns, o.Results, w.Results)
		}
	}
	wantResult(t, "team-a Report", onlyReport(open, "team-a").Results[0], "csi", "protected-pipe-mount", "fail", "deny",
		`container "driver" mounts \\.\pipe\csi-proxy-disk-v1 through volume "pipe", but it is not HostProcess and namespace "team-a" is not allowed`,
		ref("Pod", "team-a", "bad", bad.GetUID()), "driver", "csi-proxy-disk-v1")

	var ns corev1.Namespace
	if err := c.Get(ctx, client.ObjectKey{Name: "team-a"}, &ns); err != nil {
		t.Fatal(err)
	}
	ns.Labels = map[string]string{"pipeguard.io/team": "storage"}
	if err := c.Update(ctx, &ns); err != nil {
		t.Fatal(err)
	}
	gone := func(m map[string][]storedReport) bool {
		return len(m["team-a"]) == 0 && onlyReport(m, "team-b") != nil && onlyReport(m, "") != nil
	}
	pollReportsOf(t, c, policyreport.OpenReports(), "openreports.io after labelling team-a", gone)
	pollReports(t, c, "wgpolicyk8s.io after labelling team-a", gone)
	if errs := rec.errorLines(); len(errs) > 0 {
		t.Errorf("errors logged:\n%s", strings.Join(errs, "\n"))
	}
	for _, msg := range []string{"writing the background audit's violations as PolicyReports", "writing the background audit's violations as openreports.io Reports"} {
		if n := rec.infoCount(msg); n != 1 {
			t.Errorf("logged %q %d times, want once", msg, n)
		}
	}
}

// lastRun returns the start time of the latest audit pass, from its gauge.
func lastRun(t *testing.T, reg *prometheus.Registry) float64 {
	t.Helper()
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() == "pipeguard_audit_last_run_timestamp_seconds" {
			return f.GetMetric()[0].GetGauge().GetValue()
		}
	}
	return 0
}

// passesDone counts the audit passes that finished: each logs "audit pass"
// once its status, reports and events are written.
func (e reportEnv) passesDone() int { return e.log.infoCount("/audit: audit pass") }

// passesStarted counts the audit passes that reached their writes: each
// observes its duration, with the last-run gauge, before it writes.
func passesStarted(t *testing.T, reg *prometheus.Registry) uint64 {
	t.Helper()
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() == "pipeguard_audit_duration_seconds" {
			return f.GetMetric()[0].GetHistogram().GetSampleCount()
		}
	}
	return 0
}

// waitPass waits for a pass that starts after the one that started at
// since, and for it to finish writing: passes run one after the other, so
// once the last-run gauge has moved and every pass that reached its writes
// has logged its end, that pass is over.
func waitPass(t *testing.T, e reportEnv, since float64) {
	t.Helper()
	if err := wait.PollUntilContextTimeout(context.Background(), 50*time.Millisecond, time.Minute, true, func(context.Context) (bool, error) {
		return lastRun(t, e.reg) > since && uint64(e.passesDone()) == passesStarted(t, e.reg), nil
	}); err != nil {
		t.Fatalf("no audit pass after %v finished writing: %v; %d passes started, %d finished", since, err, passesStarted(t, e.reg), e.passesDone())
	}
}

// TestPolicyReportsWithoutCRDs: without the report CRDs the audit still
// writes status and logs no error, and says once that it writes no
// reports; once the CRDs are installed, the next pass writes them, with no
// restart.
func TestPolicyReportsWithoutCRDs(t *testing.T) {
	e := startReports(t, time.Hour, false, func(c client.Client) {
		mustCreate(t, c,
			&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "team-a"}},
			storagePolicy(v1alpha1.Deny),
			pipePod("bad", "team-a"),
		)
	}, func(*app.Options) {})
	c := e.c
	auditStatus(t, c, "csi", "start", func(s v1alpha1.PipeAccessPolicyStatus) bool {
		return s.TotalViolations != nil && *s.TotalViolations == 1
	})
	// A second pass, and a third.
	for range 2 {
		since := lastRun(t, e.reg)
		touchNamespace(t, c, "team-a")
		waitPass(t, e, since)
	}
	if errs := e.log.errorLines(); len(errs) > 0 {
		t.Errorf("errors logged without the CRDs:\n%s", strings.Join(errs, "\n"))
	}
	if n := e.log.infoCount("not writing PolicyReports: the API server does not serve them"); n != 1 {
		t.Errorf("the missing CRDs were logged %d times in three passes, want once", n)
	}

	// Install the CRDs as config/policyreport does.
	s := runtime.NewScheme()
	if err := apiextensionsv1.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	admin, err := client.New(e.cfg, client.Options{Scheme: s})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for _, crd := range loadReportCRDs(t) {
		if err := admin.Create(ctx, crd); err != nil {
			t.Fatal(err)
		}
		if err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
			var got apiextensionsv1.CustomResourceDefinition
			if err := admin.Get(ctx, client.ObjectKey{Name: crd.Name}, &got); err != nil {
				return false, err
			}
			for _, cond := range got.Status.Conditions {
				if cond.Type == apiextensionsv1.Established && cond.Status == apiextensionsv1.ConditionTrue {
					return true, nil
				}
			}
			return false, nil
		}); err != nil {
			t.Fatalf("CRD %s never established: %v", crd.Name, err)
		}
	}
	touchNamespace(t, c, "team-a")
	got := pollReports(t, c, "after installing the CRDs", func(m map[string][]storedReport) bool {
		r := onlyReport(m, "team-a")
		return r != nil && len(r.Results) == 1
	})
	if r := got["team-a"][0].Results[0]; r.Policy != "csi" || r.Result != "fail" {
		t.Errorf("result %+v, want policy csi, fail", r)
	}
	if errs := e.log.errorLines(); len(errs) > 0 {
		t.Errorf("errors logged:\n%s", strings.Join(errs, "\n"))
	}
}

// TestPolicyReportsNotLeader: a replica that does not hold the lease
// writes no report, even after a policy change, which on the leader
// triggers a pass, and with an interval short enough for many passes.
func TestPolicyReportsNotLeader(t *testing.T) {
	var leaseTries atomic.Int64
	e := startReports(t, 100*time.Millisecond, true, func(c client.Client) {
		now := metav1.NewMicroTime(time.Now())
		mustCreate(t, c,
			&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "team-a"}},
			&coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: app.LeaderElectionID, Namespace: "default"}, Spec: coordinationv1.LeaseSpec{
				HolderIdentity: kptr.To("another-replica"), LeaseDurationSeconds: kptr.To[int32](3600), AcquireTime: &now, RenewTime: &now,
			}},
			storagePolicy(v1alpha1.Deny),
			pipePod("bad", "team-a"),
			pipePV("pipe-pv", diskPipe),
		)
	}, func(o *app.Options) {
		o.LeaderElect, o.LeaderElectionNamespace = true, "default"
		o.Config = rest.CopyConfig(o.Config)
		o.Config.Wrap(func(next http.RoundTripper) http.RoundTripper {
			return leaseReads{next: next, n: &leaseTries}
		})
	})
	ctx := context.Background()
	a := e.app
	if err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Minute, true, func(context.Context) (bool, error) {
		return slices.Contains(a.Engine().Current().Policies, "csi"), nil
	}); err != nil {
		t.Fatalf("the replica never compiled policy csi: %v", err)
	}
	var p v1alpha1.PipeAccessPolicy
	if err := e.c.Get(ctx, client.ObjectKey{Name: "csi"}, &p); err != nil {
		t.Fatal(err)
	}
	gen := a.Engine().Current().Number
	p.Spec.EnforcementAction = v1alpha1.Warn
	if err := e.c.Update(ctx, &p); err != nil {
		t.Fatal(err)
	}
	if err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Minute, true, func(context.Context) (bool, error) {
		return a.Engine().Current().Number > gen, nil
	}); err != nil {
		t.Fatalf("the replica never compiled the change: %v", err)
	}
	// The replica asks for the lease every retry period (2 s, twenty
	// intervals): once it has asked twice more and been refused, at least
	// one full retry period, many intervals, went by after the change.
	tries := leaseTries.Load()
	if err := wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, time.Minute, true, func(context.Context) (bool, error) {
		return leaseTries.Load() >= tries+2, nil
	}); err != nil {
		t.Fatalf("the replica stopped asking for the lease after the change (%d reads in all): %v", leaseTries.Load(), err)
	}
	got, err := listReports(ctx, e.c)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) > 0 {
		t.Errorf("a replica that does not lead wrote reports:%s", describeReports(got))
	}
	if lastRun(t, e.reg) != 0 {
		t.Error("a replica that does not lead ran an audit pass")
	}
}

// leaseReads counts the replica's reads of the lease it competes for: one
// per attempt to lead.
type leaseReads struct {
	next http.RoundTripper
	n    *atomic.Int64
}

func (l leaseReads) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.Method == http.MethodGet && strings.HasSuffix(r.URL.Path, "/namespaces/default/leases/"+app.LeaderElectionID) {
		l.n.Add(1)
	}
	return l.next.RoundTrip(r)
}

// TestAuditEvents: the audit records a Warning event (events.k8s.io/v1)
// on a violating object, with reason PipeAccessViolation and the words
// admission would use, and records no other while the violations stay the
// same: later passes within the event interval (an hour) add nothing, not
// even a repetition of the event's series, which the recorder would write
// for a second identical event.
func TestAuditEvents(t *testing.T) {
	// The violating pod appears once the passes at start (which may follow
	// each other within milliseconds) are over, and passes run two seconds
	// apart: the recorder folds a repeated event into a series that it
	// writes only if the first event is stored by then.
	e := startReports(t, 2*time.Second, false, func(c client.Client) {
		mustCreate(t, c, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "team-a"}})
	}, func(*app.Options) {})
	waitPass(t, e, 0)
	// The built-in default alone: every pass finds the same violation.
	// (A policy that comes into force between passes changes the message,
	// which rightly records a new event.)
	bad := pipePod("bad", "team-a")
	mustCreate(t, e.c, bad)
	ctx := context.Background()
	events := func() []eventsv1.Event {
		t.Helper()
		var l eventsv1.EventList
		if err := e.c.List(ctx, &l, client.InNamespace("team-a")); err != nil {
			t.Fatal(err)
		}
		var out []eventsv1.Event
		for _, ev := range l.Items {
			if ev.Regarding.UID == bad.GetUID() {
				out = append(out, ev)
			}
		}
		return out
	}
	var got []eventsv1.Event
	if err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Minute, true, func(context.Context) (bool, error) {
		got = events()
		return len(got) > 0, nil
	}); err != nil {
		t.Fatalf("no event on the violating pod: %v", err)
	}
	ev := got[0]
	wantNote := `Pod bad: admission would reject this object: [protected-pipe-mount] container "driver" mounts \\.\pipe\csi-proxy-disk-v1 through volume "pipe", but it is not HostProcess and namespace "team-a" is not allowed`
	if ev.Type != corev1.EventTypeWarning || ev.Reason != controller.ReasonAuditViolation || ev.Action != "Audit" || !strings.HasPrefix(ev.Note, wantNote) ||
		ev.Regarding.Kind != "Pod" || ev.Regarding.Name != "bad" || ev.Regarding.Namespace != "team-a" {
		t.Errorf("event type %q reason %q action %q regarding %+v\nnote %q\nwant Warning PipeAccessViolation Audit on Pod team-a/bad, note starting %q",
			ev.Type, ev.Reason, ev.Action, ev.Regarding, ev.Note, wantNote)
	}
	// Two more passes: each writes its Events before it ends.
	for range 2 {
		waitPass(t, e, lastRun(t, e.reg))
	}
	got = events()
	if len(got) != 1 {
		t.Fatalf("%d events on the pod after three passes, want 1", len(got))
	}
	if got[0].Series != nil || got[0].DeprecatedCount > 1 {
		t.Errorf("the event was recorded again within the event interval: series %+v, count %d", got[0].Series, got[0].DeprecatedCount)
	}
}

// TestPolicyReportRBAC: as the ServiceAccount that config/default runs
// pipeguard-webhook as, the writer is refused without
// config/policyreport/rbac (and says so without failing the pass), and
// with it may do all it does: list across namespaces, create, update and
// delete both kinds.
func TestPolicyReportRBAC(t *testing.T) {
	env := testenv.Start(t, testenv.Options{Scheme: scheme(t), CRDs: loadReportCRDs(t)})
	ctx := context.Background()
	sa := rest.CopyConfig(env.Config)
	sa.Impersonate = rest.ImpersonationConfig{UserName: "system:serviceaccount:pipeguard-system:pipeguard-webhook"}
	c, err := client.New(sa, client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	disco, err := discovery.NewDiscoveryClientForConfig(sa)
	if err != nil {
		t.Fatal(err)
	}
	w, err := policyreport.NewWriter(policyreport.Options{Client: c, Discovery: disco})
	if err != nil {
		t.Fatal(err)
	}
	for _, ns := range []string{"team-a", "team-b"} {
		mustCreate(t, env.Client, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})
	}
	violation := func(ns, name string, action policy.Verdict) policyreport.Violation {
		kind := "Pod"
		if ns == "" {
			kind = "PersistentVolume"
		}
		return policyreport.Violation{APIVersion: "v1", Kind: kind, Namespace: ns, Name: name, UID: types.UID(name + "-uid"),
			Policy: "csi", Rule: "protected-pipe-mount", Action: action, Message: "m", Container: "driver", Pipe: "csi-proxy-disk-v1"}
	}
	all := []policyreport.Violation{violation("team-a", "a", "deny"), violation("team-b", "b", "deny"), violation("", "pv", "deny")}

	logs := &recordingLog{}
	logCtx := logr.NewContext(ctx, logr.New(logs.sink(testr.New(t).GetSink())))
	if err := w.Write(logCtx, all, time.Now()); err != nil {
		t.Fatalf("without the RBAC the pass must not fail: %v", err)
	}
	if logs.infoCount("apply config/policyreport/rbac") != 1 {
		t.Error("without the RBAC the writer did not say what to apply")
	}
	if got, err := listReports(ctx, env.Client); err != nil || len(got) != 0 {
		t.Fatalf("reports written without RBAC: %v (%v)", describeReports(got), err)
	}

	// Apply config/policyreport/rbac as an administrator.
	testenv.CreateFromFile(ctx, t, env.Client, "../../../config/policyreport/rbac/role.yaml")
	// RBAC takes effect through the authorizer's informers: retry.
	if err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, time.Minute, true, func(context.Context) (bool, error) {
		if err := w.Write(ctx, all, time.Now()); err != nil {
			return false, err
		}
		got, err := listReports(ctx, env.Client)
		return err == nil && len(got) == 3, nil
	}); err != nil {
		t.Fatalf("with config/policyreport/rbac the writer never wrote the three reports: %v", err)
	}
	// Update one, delete the others.
	if err := w.Write(ctx, []policyreport.Violation{violation("team-a", "a", "warn")}, time.Now()); err != nil {
		t.Fatalf("updating and deleting as the ServiceAccount: %v", err)
	}
	got, err := listReports(ctx, env.Client)
	if err != nil {
		t.Fatal(err)
	}
	if r := onlyReport(got, "team-a"); len(got) != 1 || r == nil || r.Summary != (policyreport.Summary{Warn: 1}) {
		t.Errorf("after the update and deletions:%s", describeReports(got))
	}
}
