package app_test

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/testr"
	"github.com/prometheus/client_golang/prometheus"
	appsv1 "k8s.io/api/apps/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/util/retry"
	kptr "k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/pipeguard/pipeguard/api/v1alpha1"
	"github.com/pipeguard/pipeguard/cmd/pipeguard-webhook/app"
	"github.com/pipeguard/pipeguard/internal/testing/testenv"
)

// startAudited starts a control plane with no webhook registered, lets
// setup create objects there (nothing reviews them), then starts
// pipeguard-webhook with the given audit interval.
func startAudited(t *testing.T, interval time.Duration, setup func(c client.Client)) (client.Client, *prometheus.Registry) {
	t.Helper()
	c, reg, _ := startAuditedWith(t, interval, setup, func(*app.Options) {})
	return c, reg
}

func startAuditedWith(t *testing.T, interval time.Duration, setup func(c client.Client), mutate func(*app.Options)) (client.Client, *prometheus.Registry, *app.App) {
	t.Helper()
	env, reg, a := startWebhookOn(t, testenv.Options{Scheme: scheme(t), CRDDirectoryPaths: []string{"../../../config/crd/bases"}}, interval, testr.New(t), setup, mutate)
	return env.Client, reg, a
}

// startWebhookOn starts a control plane with envOpts, lets setup create
// objects there while no webhook is registered, then runs
// pipeguard-webhook on it with the given audit interval and logger,
// options changed by mutate, until the test ends.
func startWebhookOn(t *testing.T, envOpts testenv.Options, interval time.Duration, logger logr.Logger, setup func(c client.Client), mutate func(*app.Options)) (*testenv.Env, *prometheus.Registry, *app.App) {
	t.Helper()
	env := testenv.Start(t, envOpts)
	setup(env.Client)
	ctx, cancel := context.WithCancel(context.Background())
	registry := prometheus.NewRegistry()
	ws := env.WebhookServer()
	opts := app.Options{
		Config: env.Config, Logger: logger, WebhookHost: ws.Host, WebhookPort: ws.Port, CertDir: ws.CertDir,
		MetricsAddr: "0", ProbeAddr: "0", Registry: registry, AuditInterval: interval,
	}
	mutate(&opts)
	a, err := app.New(ctx, opts)
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- a.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		<-done
	})
	return env, registry, a
}

func mustCreate(t *testing.T, c client.Client, objs ...client.Object) {
	t.Helper()
	for _, o := range objs {
		if err := c.Create(context.Background(), o); err != nil {
			t.Fatalf("creating %T %s: %v", o, o.GetName(), err)
		}
	}
}

// auditStatus polls until the policy's audit status satisfies ok.
func auditStatus(t *testing.T, c client.Client, name, what string, ok func(v1alpha1.PipeAccessPolicyStatus) bool) v1alpha1.PipeAccessPolicyStatus {
	t.Helper()
	var p v1alpha1.PipeAccessPolicy
	err := wait.PollUntilContextTimeout(context.Background(), 100*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		if err := c.Get(ctx, client.ObjectKey{Name: name}, &p); err != nil {
			return false, err
		}
		return p.Status.AuditTimestamp != nil && ok(p.Status), nil
	})
	if err != nil {
		t.Fatalf("%s: policy %s status never did: %v; last status %+v", what, name, err, p.Status)
	}
	return p.Status
}

func auditGauge(t *testing.T, reg *prometheus.Registry, pol, action string) float64 {
	t.Helper()
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() != "pipeguard_audit_violations" {
			continue
		}
		for _, m := range f.GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			if labels["policy"] == pol && labels["action"] == action {
				return m.GetGauge().GetValue()
			}
		}
	}
	return -1
}

func storagePolicy(action v1alpha1.EnforcementAction) *v1alpha1.PipeAccessPolicy {
	return &v1alpha1.PipeAccessPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: "csi"},
		Spec: v1alpha1.PipeAccessPolicySpec{
			Pipes:             []string{"csi-proxy-*"},
			EnforcementAction: action,
			Allow:             v1alpha1.Allowances{NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"pipeguard.io/team": "storage"}}},
		},
	}
}

// TestAuditFindsWhatRuns: objects created before the webhook is registered
// are audited at start; only the violating ones are reported, with the
// words admission would use; a namespace label change and a policy change
// each trigger a pass (the interval is far too long to explain them).
func TestAuditFindsWhatRuns(t *testing.T) {
	c, reg := startAudited(t, time.Hour, func(c client.Client) {
		priv := hostProcessPipePod("hostprocess", "team-a")
		mustCreate(t, c,
			&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "team-a"}},
			storagePolicy(v1alpha1.Deny),
			pipePod("bad", "team-a"), priv,
			&appsv1.DaemonSet{ObjectMeta: metav1.ObjectMeta{Name: "node", Namespace: "team-a"}, Spec: appsv1.DaemonSetSpec{
				Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "node"}},
				Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "node"}}, Spec: pipeSpec()},
			}},
		)
	})
	st := auditStatus(t, c, "csi", "start", func(s v1alpha1.PipeAccessPolicyStatus) bool {
		return s.TotalViolations != nil && *s.TotalViolations == 2
	})
	want := `[protected-pipe-mount] container "driver" mounts \\.\pipe\csi-proxy-disk-v1 through volume "pipe", but it is not HostProcess and namespace "team-a" is not allowed`
	got := []string{}
	for _, v := range st.Violations {
		got = append(got, v.Kind+" "+v.Namespace+"/"+v.Name+" "+v.Container+" "+v.Pipe+" "+v.Action)
		if !strings.HasPrefix(v.Message, want) {
			t.Errorf("message %q\nwant it to start with %q", v.Message, want)
		}
	}
	if strings.Join(got, "\n") != "Pod team-a/bad driver csi-proxy-disk-v1 deny\nDaemonSet team-a/node driver csi-proxy-disk-v1 deny" {
		t.Errorf("violations:\n%s", strings.Join(got, "\n"))
	}
	if g := auditGauge(t, reg, "csi", "deny"); g != 2 {
		t.Errorf("pipeguard_audit_violations{policy=csi,action=deny} = %v, want 2", g)
	}

	// A policy change triggers a pass. The controller writes the policy's
	// status meanwhile, so the change is retried on a conflict.
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		var p v1alpha1.PipeAccessPolicy
		if err := c.Get(context.Background(), client.ObjectKey{Name: "csi"}, &p); err != nil {
			return err
		}
		p.Spec.EnforcementAction = v1alpha1.Warn
		return c.Update(context.Background(), &p)
	})
	if err != nil {
		t.Fatal(err)
	}
	auditStatus(t, c, "csi", "after the policy turned to warn", func(s v1alpha1.PipeAccessPolicyStatus) bool {
		return len(s.Violations) == 2 && s.Violations[0].Action == "warn" && s.Violations[1].Action == "warn"
	})

	// Labelling the namespace allows it: the next pass, triggered by the
	// label change, clears the violations.
	var ns corev1.Namespace
	if err := c.Get(context.Background(), client.ObjectKey{Name: "team-a"}, &ns); err != nil {
		t.Fatal(err)
	}
	ns.Labels = map[string]string{"pipeguard.io/team": "storage"}
	if err := c.Update(context.Background(), &ns); err != nil {
		t.Fatal(err)
	}
	auditStatus(t, c, "csi", "after labelling the namespace", func(s v1alpha1.PipeAccessPolicyStatus) bool {
		return *s.TotalViolations == 0 && len(s.Violations) == 0
	})
	if g := auditGauge(t, reg, "csi", "warn"); g != 0 {
		t.Errorf("pipeguard_audit_violations{policy=csi,action=warn} = %v, want 0", g)
	}
}

// TestAuditIntervalSeesFixes: fixing the workload clears its violation on
// the next periodic pass, with no other trigger.
func TestAuditIntervalSeesFixes(t *testing.T) {
	c, _ := startAudited(t, time.Second, func(c client.Client) {
		mustCreate(t, c,
			&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "team-a"}},
			storagePolicy(v1alpha1.Deny),
			pipePod("bad", "team-a"),
		)
	})
	auditStatus(t, c, "csi", "start", func(s v1alpha1.PipeAccessPolicyStatus) bool {
		return s.TotalViolations != nil && *s.TotalViolations == 1
	})
	if err := c.Delete(context.Background(), pipePod("bad", "team-a"), client.GracePeriodSeconds(0)); err != nil {
		t.Fatal(err)
	}
	auditStatus(t, c, "csi", "after deleting the pod", func(s v1alpha1.PipeAccessPolicyStatus) bool {
		return *s.TotalViolations == 0
	})
}

// TestAuditNotLeader: a replica that does not hold the lease compiles the
// policies (it must, to answer reviews) but audits and writes nothing, even
// after a policy change, which on the leader triggers a pass.
func TestAuditNotLeader(t *testing.T) {
	c, reg, a := startAuditedWith(t, 100*time.Millisecond, func(c client.Client) {
		now := metav1.NewMicroTime(time.Now())
		mustCreate(t, c,
			&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "team-a"}},
			&coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: app.LeaderElectionID, Namespace: "default"}, Spec: coordinationv1.LeaseSpec{
				HolderIdentity: kptr.To("another-replica"), LeaseDurationSeconds: kptr.To[int32](3600), AcquireTime: &now, RenewTime: &now,
			}},
			storagePolicy(v1alpha1.Deny),
			pipePod("bad", "team-a"),
		)
	}, func(o *app.Options) { o.LeaderElect, o.LeaderElectionNamespace = true, "default" })
	ctx := context.Background()
	if err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Minute, true, func(context.Context) (bool, error) {
		return slices.Contains(a.Engine().Current().Policies, "csi"), nil
	}); err != nil {
		t.Fatalf("the replica never compiled policy csi: %v", err)
	}
	var p v1alpha1.PipeAccessPolicy
	if err := c.Get(ctx, client.ObjectKey{Name: "csi"}, &p); err != nil {
		t.Fatal(err)
	}
	gen := a.Engine().Current().Number
	p.Spec.EnforcementAction = v1alpha1.Warn
	if err := c.Update(ctx, &p); err != nil {
		t.Fatal(err)
	}
	if err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Minute, true, func(context.Context) (bool, error) {
		return a.Engine().Current().Number > gen, nil
	}); err != nil {
		t.Fatalf("the replica never compiled the change: %v", err)
	}
	if err := c.Get(ctx, client.ObjectKey{Name: "csi"}, &p); err != nil {
		t.Fatal(err)
	}
	if p.Status.AuditTimestamp != nil || p.Status.TotalViolations != nil || len(p.Status.Violations) > 0 || p.Status.ObservedGeneration != 0 {
		t.Errorf("a replica that does not lead wrote status: %+v", p.Status)
	}
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() == "pipeguard_audit_last_run_timestamp_seconds" && f.GetMetric()[0].GetGauge().GetValue() != 0 {
			t.Errorf("a replica that does not lead ran an audit pass")
		}
	}
}
