package app_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr/testr"
	"github.com/prometheus/client_golang/prometheus"
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/pipeguard/pipeguard/api/v1alpha1"
	"github.com/pipeguard/pipeguard/cmd/pipeguard-webhook/app"
	"github.com/pipeguard/pipeguard/controller"
	"github.com/pipeguard/pipeguard/internal/testing/testenv"
	"github.com/pipeguard/pipeguard/policy"
)

// These tests run pipeguard-webhook against a real kube-apiserver and etcd,
// installed with the CRD and webhook configuration from config/, and talk
// to it only through the API server, as users do.

const diskPipe = `\\.\pipe\csi-proxy-disk-v1`

type cluster struct {
	env    *testenv.Env
	client client.Client
	app    *app.App
	// warnings collects the admission warnings the API server returned.
	warnings *warningRecorder
	// metrics is the webhook's registry.
	metrics *prometheus.Registry
}

type warningRecorder struct {
	mu   sync.Mutex
	msgs []string
}

func (w *warningRecorder) HandleWarningHeader(_ int, _ string, msg string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.msgs = append(w.msgs, msg)
}

func (w *warningRecorder) take() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := w.msgs
	w.msgs = nil
	return out
}

func scheme(t *testing.T) *runtime.Scheme {
	s := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	if err := v1alpha1.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	return s
}

func startCluster(t *testing.T) *cluster {
	t.Helper()
	return startClusterWith(t, nil)
}

// startClusterWith is startCluster with the app's options changed by
// mutate first.
func startClusterWith(t *testing.T, mutate func(*app.Options)) *cluster {
	t.Helper()
	s := scheme(t)
	ctrllog.SetLogger(testr.New(t))
	env := testenv.Start(t, testenv.Options{
		Scheme:            s,
		CRDDirectoryPaths: []string{"../../../config/crd/bases"},
		Webhooks:          testenv.WebhookOptions{Paths: []string{"../../../config/webhook/manifests.yaml"}},
	})
	ws := env.WebhookServer()
	registry := prometheus.NewRegistry()
	opts := app.Options{
		Config: env.Config, Logger: testr.New(t),
		WebhookHost: ws.Host, WebhookPort: ws.Port, CertDir: ws.CertDir,
		MetricsAddr: "0", ProbeAddr: "0", Registry: registry,
	}
	if mutate != nil {
		mutate(&opts)
	}
	a, ctx := app.RunForTest(t, opts)

	warnings := &warningRecorder{}
	cfg := rest.CopyConfig(env.Config)
	cfg.WarningHandler = warnings
	c, err := client.New(cfg, client.Options{Scheme: s})
	if err != nil {
		t.Fatal(err)
	}
	cl := &cluster{env: env, client: c, app: a, warnings: warnings, metrics: registry}
	if err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Minute, true, func(context.Context) (bool, error) {
		return a.Ready(), nil
	}); err != nil {
		t.Fatalf("webhook never became ready: %v", err)
	}
	for _, ns := range []*corev1.Namespace{
		{ObjectMeta: metav1.ObjectMeta{Name: "team-a"}},
		{ObjectMeta: metav1.ObjectMeta{Name: "csi-driver", Labels: map[string]string{policy.AllowLabel: "true"}}},
	} {
		cl.mustCreate(t, ns)
	}
	// The webhook answers once its TLS server is up: wait until a pod that
	// must be denied is denied.
	if err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		err := c.Create(ctx, pipePod("probe", "team-a"), client.DryRunAll)
		return err != nil && strings.Contains(err.Error(), "protected-pipe-mount"), nil
	}); err != nil {
		t.Fatalf("the API server never got a decision from the webhook: %v", err)
	}
	return cl
}

// reviews counts the admission requests the webhook has answered.
func (c *cluster) reviews(t *testing.T) float64 {
	t.Helper()
	families, err := c.metrics.Gather()
	if err != nil {
		t.Fatal(err)
	}
	total := 0.0
	for _, f := range families {
		if f.GetName() != "pipeguard_admission_requests_total" {
			continue
		}
		for _, m := range f.GetMetric() {
			total += m.GetCounter().GetValue()
		}
	}
	return total
}

func (c *cluster) mustCreate(t *testing.T, obj client.Object) {
	t.Helper()
	if err := c.client.Create(context.Background(), obj); err != nil {
		t.Fatalf("creating %T %s: %v", obj, obj.GetName(), err)
	}
}

// denied asserts that err is the webhook's rejection and carries msg.
func denied(t *testing.T, err error, msg string) {
	t.Helper()
	if err == nil {
		t.Fatalf("admitted, want a rejection containing %q", msg)
	}
	if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), `admission webhook "`) {
		t.Fatalf("error %v, want a webhook rejection", err)
	}
	if !strings.Contains(err.Error(), msg) {
		t.Fatalf("rejection %q\nwant it to contain %q", err, msg)
	}
}

func pipeSpec() corev1.PodSpec {
	no := false
	return corev1.PodSpec{
		ServiceAccountName:           "default",
		AutomountServiceAccountToken: &no,
		Containers: []corev1.Container{{
			Name: "driver", Image: "driver",
			VolumeMounts: []corev1.VolumeMount{{Name: "pipe", MountPath: `C:\pipe`}},
		}},
		Volumes: []corev1.Volume{{Name: "pipe", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: diskPipe}}}},
	}
}

func pipePod(name, ns string) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}, Spec: pipeSpec()}
}

// hostProcessPipePod is pipePod as a HostProcess pod, which the allowance
// of every shipped policy lets mount the pipe.
func hostProcessPipePod(name, ns string) *corev1.Pod {
	yes := true
	p := pipePod(name, ns)
	p.Spec.HostNetwork = true
	p.Spec.SecurityContext = &corev1.PodSecurityContext{WindowsOptions: &corev1.WindowsSecurityContextOptions{HostProcess: &yes}}
	return p
}

func TestWebhookOnControlPlane(t *testing.T) {
	c := startCluster(t)
	ctx := context.Background()
	template := corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "x"}}, Spec: pipeSpec()}
	selector := &metav1.LabelSelector{MatchLabels: map[string]string{"app": "x"}}

	t.Run("pod in an unlabelled namespace is rejected with the actionable message", func(t *testing.T) {
		err := c.client.Create(ctx, pipePod("driver", "team-a"))
		denied(t, err, `[protected-pipe-mount] container "driver" mounts \\.\pipe\csi-proxy-disk-v1 through volume "pipe", but it is not HostProcess and namespace "team-a" is not allowed; to allow it, label the namespace pipeguard.io/allow-csi-proxy=true, or run the container as HostProcess`)
	})

	t.Run("the same pod in an allowed namespace is created", func(t *testing.T) {
		c.mustCreate(t, pipePod("driver", "csi-driver"))
	})

	t.Run("pod without host paths never reaches the webhook", func(t *testing.T) {
		before := c.reviews(t)
		if before == 0 {
			t.Fatal("the webhook has counted no review yet; the count below would prove nothing")
		}
		p := pipePod("plain", "team-a")
		p.Spec.Volumes[0].VolumeSource = corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}
		c.mustCreate(t, p)
		if after := c.reviews(t); after != before {
			t.Fatalf("the webhook reviewed %v requests for a pod without host paths; the matchConditions should keep it away", after-before)
		}
	})

	t.Run("Deployment is rejected", func(t *testing.T) {
		d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "d", Namespace: "team-a"},
			Spec: appsv1.DeploymentSpec{Selector: selector, Template: template}}
		denied(t, c.client.Create(ctx, d), `container "driver" mounts \\.\pipe\csi-proxy-disk-v1`)
	})

	t.Run("CronJob is rejected", func(t *testing.T) {
		tmpl := template
		tmpl.Spec.RestartPolicy = corev1.RestartPolicyNever
		cj := &batchv1.CronJob{ObjectMeta: metav1.ObjectMeta{Name: "cj", Namespace: "team-a"},
			Spec: batchv1.CronJobSpec{Schedule: "* * * * *", JobTemplate: batchv1.JobTemplateSpec{Spec: batchv1.JobSpec{Template: tmpl}}}}
		denied(t, c.client.Create(ctx, cj), `container "driver" mounts \\.\pipe\csi-proxy-disk-v1`)
	})

	t.Run("ephemeral container mounting the pipe is rejected", func(t *testing.T) {
		// The pod has the pipe volume but no container mounts it, so it is
		// admitted; the ephemeral container then mounts it.
		p := pipePod("debug-me", "team-a")
		p.Spec.Containers[0].VolumeMounts = nil
		c.mustCreate(t, p)
		cs := kubernetes.NewForConfigOrDie(c.env.Config)
		p.Spec.EphemeralContainers = []corev1.EphemeralContainer{{
			EphemeralContainerCommon: corev1.EphemeralContainerCommon{
				Name: "debugger", Image: "busybox",
				VolumeMounts: []corev1.VolumeMount{{Name: "pipe", MountPath: `C:\p`}},
			},
			TargetContainerName: "driver",
		}}
		_, err := cs.CoreV1().Pods("team-a").UpdateEphemeralContainers(ctx, "debug-me", p, metav1.UpdateOptions{})
		denied(t, err, `container "debugger" (ephemeralContainer) mounts \\.\pipe\csi-proxy-disk-v1`)
	})

	t.Run("PersistentVolume pointing at the pipe is rejected", func(t *testing.T) {
		pv := &corev1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: "pipe-pv"}, Spec: corev1.PersistentVolumeSpec{
			Capacity:               corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")},
			AccessModes:            []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			PersistentVolumeSource: corev1.PersistentVolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: `//./PIPE/CSI-PROXY-DISK-V1`}},
		}}
		denied(t, c.client.Create(ctx, pv), `[protected-pipe-pv] PersistentVolume "pipe-pv" points at \\.\pipe\csi-proxy-disk-v1 (hostPath)`)
	})

	t.Run("nobody grants themselves an allowance", func(t *testing.T) { namespaceAllowanceGuard(t, c) })
	t.Run("a label set before a policy reads it never grants", func(t *testing.T) { latentLabelGrant(t, c) })

	t.Run("a policy about other pipes leaves the csi-proxy pipes protected", func(t *testing.T) {
		docker := &v1alpha1.PipeAccessPolicy{ObjectMeta: metav1.ObjectMeta{Name: "docker"}, Spec: v1alpha1.PipeAccessPolicySpec{
			Pipes: []string{"docker_engine"},
			Allow: v1alpha1.Allowances{Namespaces: []string{"team-a"}},
		}}
		c.mustCreate(t, docker)
		cond := waitReady(t, c, "docker", metav1.ConditionTrue, "")
		if want := "the built-in default pipeguard-default still protects every CSI Proxy pipe"; !strings.Contains(cond.Message, want) {
			t.Errorf("Ready condition message %q does not say %q", cond.Message, want)
		}
		if got := c.gauge(t, "pipeguard_builtin_policy_in_force"); got != 1 {
			t.Errorf("pipeguard_builtin_policy_in_force = %v, want 1", got)
		}
		// docker allows team-a, but only for its own pipe.
		denied(t, c.client.Create(ctx, pipePod("bare", "team-a"), client.DryRunAll),
			`[protected-pipe-mount] container "driver" mounts \\.\pipe\csi-proxy-disk-v1 through volume "pipe", but it is not HostProcess and namespace "team-a" is not allowed; to allow it, label the namespace pipeguard.io/allow-csi-proxy=true`)
		dockerPod := pipePod("docker", "team-a")
		dockerPod.Spec.Volumes[0].HostPath.Path = `\\.\pipe\docker_engine`
		if err := c.client.Create(ctx, dockerPod, client.DryRunAll); err != nil {
			t.Fatalf("the docker policy's allowance does not hold: %v", err)
		}
		if err := c.client.Delete(ctx, docker); err != nil {
			t.Fatal(err)
		}
	})

	t.Run("broken rego keeps the old policy in force until it is fixed", func(t *testing.T) {
		p := &v1alpha1.PipeAccessPolicy{ObjectMeta: metav1.ObjectMeta{Name: "disk"}, Spec: v1alpha1.PipeAccessPolicySpec{
			Pipes: []string{"csi-proxy-*"},
			Allow: v1alpha1.Allowances{Namespaces: []string{"csi-driver"}},
		}}
		c.mustCreate(t, p)
		cond := waitReady(t, c, "disk", metav1.ConditionTrue, "")
		if want := "the built-in default pipeguard-default is not in force: the policies cover every CSI Proxy pipe"; !strings.Contains(cond.Message, want) {
			t.Errorf("Ready condition message %q does not say %q", cond.Message, want)
		}

		// The new spec would only warn, but it does not compile: deny
		// stays in force, and kubectl get says so.
		c.updatePolicy(t, "disk", func(p *v1alpha1.PipeAccessPolicy) {
			p.Spec.EnforcementAction = v1alpha1.Warn
			p.Spec.Rego = []v1alpha1.RegoModule{{Name: "rules.rego", Source: "package pipeguard.admission.disk\n\nviolation contains msg if {\n\tmsg := \n}\n"}}
		})
		cond = waitReady(t, c, "disk", metav1.ConditionFalse, "disk/rules.rego:5: rego_parse_error")
		if want := "the latest spec (generation 2) is not in force: "; !strings.HasPrefix(cond.Message, want) {
			t.Errorf("Ready condition message %q does not start with %q", cond.Message, want)
		}
		if want := "generation 1 of this policy stays in force until the error is fixed (enforcementAction deny)"; !strings.Contains(cond.Message, want) {
			t.Errorf("Ready condition message %q does not say what stays in force", cond.Message)
		}
		row := c.tableRow(t, "disk")
		for column, want := range map[string]string{"Ready": "False", "Action": "deny", "Reason": "Invalid", "In-Force": "1", "Latest-Action": "warn"} {
			if got := row[column]; got != want {
				t.Errorf("kubectl get pipeaccesspolicies: %s = %q, want %q (row %v)", column, got, want, row)
			}
		}
		denied(t, c.client.Create(ctx, pipePod("still-denied", "team-a")), `namespace "team-a" is not allowed`)

		// Fixed: a custom rule that denies every pipe mount from team-a's
		// "blocked" container name takes effect without a restart.
		c.updatePolicy(t, "disk", func(p *v1alpha1.PipeAccessPolicy) {
			p.Spec.EnforcementAction = v1alpha1.Deny
			p.Spec.Rego[0].Source = "package pipeguard.admission.disk\n\nviolation contains {\"rule\": \"no-blocked\", \"msg\": \"containers named blocked may not mount pipes\"} if {\n\tsome m in input.mounts\n\tm.container == \"blocked\"\n\tm.pathClass == \"pipe\"\n}\n"
		})
		waitReady(t, c, "disk", metav1.ConditionTrue, "")
		blocked := pipePod("blocked", "csi-driver")
		blocked.Spec.Containers[0].Name = "blocked"
		denied(t, c.client.Create(ctx, blocked), "[no-blocked] containers named blocked may not mount pipes")
	})

	t.Run("warn returns warnings to the client and dryrun admits", func(t *testing.T) {
		c.updatePolicy(t, "disk", func(p *v1alpha1.PipeAccessPolicy) {
			p.Spec.EnforcementAction = v1alpha1.Warn
			p.Spec.Rego = nil
		})
		waitReady(t, c, "disk", metav1.ConditionTrue, "")
		c.warnings.take()
		c.mustCreate(t, pipePod("warned", "team-a"))
		warnings := c.warnings.take()
		if len(warnings) != 1 || !strings.HasPrefix(warnings[0], `[protected-pipe-mount] container "driver" mounts \\.\pipe\csi-proxy-disk-v1`) {
			t.Fatalf("warnings %q, want the violation", warnings)
		}

		c.updatePolicy(t, "disk", func(p *v1alpha1.PipeAccessPolicy) { p.Spec.EnforcementAction = v1alpha1.DryRun })
		waitReady(t, c, "disk", metav1.ConditionTrue, "")
		c.mustCreate(t, pipePod("dry", "team-a"))
		if w := c.warnings.take(); len(w) != 0 {
			t.Fatalf("dryrun returned warnings %q", w)
		}
	})
}

// updatePolicy changes a policy, retrying when the controller's status
// writes got there first.
func (c *cluster) updatePolicy(t *testing.T, name string, mutate func(*v1alpha1.PipeAccessPolicy)) {
	t.Helper()
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		p := &v1alpha1.PipeAccessPolicy{}
		if err := c.client.Get(context.Background(), client.ObjectKey{Name: name}, p); err != nil {
			return err
		}
		mutate(p)
		return c.client.Update(context.Background(), p)
	})
	if err != nil {
		t.Fatalf("updating PipeAccessPolicy %s: %v", name, err)
	}
}

// waitReady waits until the policy's Ready condition for its current
// generation has the status and, if given, a message containing msg.
func waitReady(t *testing.T, c *cluster, name string, status metav1.ConditionStatus, msg string) metav1.Condition {
	t.Helper()
	var last metav1.Condition
	err := wait.PollUntilContextTimeout(context.Background(), 100*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		p := &v1alpha1.PipeAccessPolicy{}
		if err := c.client.Get(ctx, client.ObjectKey{Name: name}, p); err != nil {
			return false, err
		}
		cond := meta.FindStatusCondition(p.Status.Conditions, controller.ConditionReady)
		if cond == nil || cond.ObservedGeneration != p.Generation {
			return false, nil
		}
		last = *cond
		return cond.Status == status && strings.Contains(cond.Message, msg), nil
	})
	if err != nil {
		t.Fatalf("PipeAccessPolicy %s: Ready=%s %q, want %s with %q: %v", name, last.Status, last.Message, status, msg, errors.Unwrap(err))
	}
	return last
}

// gauge reads a gauge of the webhook's registry.
func (c *cluster) gauge(t *testing.T, name string) float64 {
	t.Helper()
	families, err := c.metrics.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() == name && len(f.GetMetric()) == 1 {
			return f.GetMetric()[0].GetGauge().GetValue()
		}
	}
	t.Fatalf("no gauge %s", name)
	return 0
}

// tableRow returns the columns of a PipeAccessPolicy as `kubectl get -o
// wide` shows them: the API server's table for the CRD's printer columns.
func (c *cluster) tableRow(t *testing.T, name string) map[string]string {
	t.Helper()
	cfg := rest.CopyConfig(c.env.Config)
	cfg.GroupVersion = &v1alpha1.GroupVersion
	cfg.APIPath = "/apis"
	cfg.NegotiatedSerializer = clientgoscheme.Codecs.WithoutConversion()
	rc, err := rest.RESTClientFor(cfg)
	if err != nil {
		t.Fatal(err)
	}
	body, err := rc.Get().Resource("pipeaccesspolicies").Name(name).Param("includeObject", "None").
		SetHeader("Accept", "application/json;as=Table;v=v1;g=meta.k8s.io").DoRaw(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var table metav1.Table
	if err := json.Unmarshal(body, &table); err != nil {
		t.Fatal(err)
	}
	if len(table.Rows) != 1 {
		t.Fatalf("table has %d rows, want 1", len(table.Rows))
	}
	row := map[string]string{}
	for i, col := range table.ColumnDefinitions {
		if i < len(table.Rows[0].Cells) && table.Rows[0].Cells[i] != nil {
			row[col.Name] = fmt.Sprint(table.Rows[0].Cells[i])
		}
	}
	return row
}
