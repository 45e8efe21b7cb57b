package app_test

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"strings"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/pipeguard/pipeguard/api/v1alpha1"
	"github.com/pipeguard/pipeguard/cmd/pipeguard-webhook/app"
	"github.com/pipeguard/pipeguard/controller"
	"github.com/pipeguard/pipeguard/internal/testing/testenv"
	"github.com/pipeguard/pipeguard/internal/testing/webhookconfig"
)

// Allowances are judged by what Windows does, on a real API server: the
// kubelet ignores securityContext.privileged, and a HostProcess container
// reaches every host pipe without any mount.

const realManifests = "../../../../shared/real-manifests/"

func hostProcessSC() *corev1.WindowsSecurityContextOptions {
	yes := true
	return &corev1.WindowsSecurityContextOptions{HostProcess: &yes, RunAsUserName: ptrTo(`NT AUTHORITY\SYSTEM`)}
}

func ptrTo[T any](v T) *T { return &v }

// hostProcessObjects are HostProcess objects that mount no pipe.
func hostProcessObjects(ns string) map[string]client.Object {
	plain := func(mutate func(*corev1.PodSpec)) corev1.PodSpec {
		s := corev1.PodSpec{HostNetwork: true, Containers: []corev1.Container{{Name: "node", Image: "node"}}}
		mutate(&s)
		return s
	}
	podLevel := plain(func(s *corev1.PodSpec) {
		s.SecurityContext = &corev1.PodSecurityContext{WindowsOptions: hostProcessSC()}
	})
	withLog := plain(func(s *corev1.PodSpec) {
		s.SecurityContext = &corev1.PodSecurityContext{WindowsOptions: hostProcessSC()}
		s.Volumes = []corev1.Volume{{Name: "log", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: `C:\var\log`}}}}
		s.Containers[0].VolumeMounts = []corev1.VolumeMount{{Name: "log", MountPath: `C:\log`}}
	})
	meta := func(name string) metav1.ObjectMeta { return metav1.ObjectMeta{Name: name, Namespace: ns} }
	return map[string]client.Object{
		"pod level": &corev1.Pod{ObjectMeta: meta("hp-pod"), Spec: podLevel},
		"container level": &corev1.Pod{ObjectMeta: meta("hp-container"), Spec: plain(func(s *corev1.PodSpec) {
			s.Containers[0].SecurityContext = &corev1.SecurityContext{WindowsOptions: hostProcessSC()}
		})},
		"with an ordinary hostPath": &corev1.Pod{ObjectMeta: meta("hp-log"), Spec: withLog},
		"a DaemonSet": &appsv1.DaemonSet{ObjectMeta: meta("hp-ds"), Spec: appsv1.DaemonSetSpec{Selector: outageSelector(),
			Template: outageTemplate(podLevel)}},
	}
}

// condition reads a condition the leader keeps.
func condition(t *testing.T, c client.Client, webhook, name string) string {
	t.Helper()
	var cfg admissionregistrationv1.ValidatingWebhookConfiguration
	if err := c.Get(context.Background(), client.ObjectKey{Name: "pipeguard"}, &cfg); err != nil {
		t.Fatal(err)
	}
	for _, w := range cfg.Webhooks {
		for _, mc := range w.MatchConditions {
			if w.Name == webhook && mc.Name == name {
				return mc.Expression
			}
		}
	}
	t.Fatalf("ValidatingWebhookConfiguration pipeguard has no condition %s in webhook %s", name, webhook)
	return ""
}

func waitCondition(t *testing.T, c client.Client, webhook, name, want string) {
	t.Helper()
	err := wait.PollUntilContextTimeout(context.Background(), 100*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
		return condition(t, c, webhook, name) == want, nil
	})
	if err != nil {
		t.Fatalf("condition %s of webhook %s stayed %q, want %q", name, webhook, condition(t, c, webhook, name), want)
	}
}

func waitRouting(t *testing.T, c client.Client, want string) {
	t.Helper()
	waitCondition(t, c, controller.HostProcessWebhook, controller.HostProcessCondition, want)
}

func TestWindowsAllowancesOnControlPlane(t *testing.T) {
	cl := startClusterWith(t, func(o *app.Options) { o.WebhookConfigName = "pipeguard" })
	ctx := context.Background()
	c := cl.client
	cl.mustCreate(t, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "csi-smb"}})

	t.Run("privileged is no allowance", func(t *testing.T) {
		const told = "securityContext.privileged has no effect on Windows"
		p := pipePod("privileged", "team-a")
		p.Spec.Containers[0].SecurityContext = &corev1.SecurityContext{Privileged: ptrTo(true)}
		denied(t, c.Create(ctx, p, client.DryRunAll), told)

		f, err := os.Open(realManifests + "azuredisk-node-windows.yaml")
		if errors.Is(err, fs.ErrNotExist) {
			t.Skipf("%s is not there (it is kept beside the repository, not in it)", realManifests)
		}
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		var ds appsv1.DaemonSet
		if err := utilyaml.NewYAMLOrJSONDecoder(f, 4096).Decode(&ds); err != nil || ds.Kind != "DaemonSet" {
			t.Fatalf("azuredisk-node-windows.yaml: %v (kind %q), want the DaemonSet first", err, ds.Kind)
		}
		ds.Namespace = "team-a"
		denied(t, c.Create(ctx, ds.DeepCopy(), client.DryRunAll), `[protected-pipe-mount] container "azuredisk" mounts`)
		for i := range ds.Spec.Template.Spec.Containers {
			ds.Spec.Template.Spec.Containers[i].SecurityContext = &corev1.SecurityContext{Privileged: ptrTo(true)}
		}
		denied(t, c.Create(ctx, &ds, client.DryRunAll), told)
	})

	t.Run("HostProcess needs the webhook only while a policy withholds it", func(t *testing.T) {
		waitRouting(t, c, "false")
		for name, obj := range hostProcessObjects("team-a") {
			if err := c.Create(ctx, obj, client.DryRunAll); err != nil {
				t.Errorf("%s: %v, want admitted under the built-in default", name, err)
			}
		}
		cl.mustCreate(t, &v1alpha1.PipeAccessPolicy{ObjectMeta: metav1.ObjectMeta{Name: "smb"}, Spec: v1alpha1.PipeAccessPolicySpec{
			Pipes: []string{"csi-proxy-smb-*"}, EnforcementAction: v1alpha1.Deny,
			Allow: v1alpha1.Allowances{HostProcess: ptrTo(false), Privileged: ptrTo(false), Namespaces: []string{"csi-smb"}},
		}})
		waitRouting(t, c, "true")
		waitReady(t, cl, "smb", metav1.ConditionTrue, "warning: spec.allow.hostProcess is false: a HostProcess container reaches every host pipe without any mount")
		for _, obj := range hostProcessObjects("team-a") {
			denied(t, c.Create(ctx, obj, client.DryRunAll), `PipeAccessPolicy "smb" withholds the HostProcess allowance and namespace "team-a" is not allowed`)
		}
		for name, obj := range hostProcessObjects("csi-smb") {
			if err := c.Create(ctx, obj, client.DryRunAll); err != nil {
				t.Errorf("%s in csi-smb: %v, want admitted: the policy allows the namespace", name, err)
			}
		}
		// An ambiguous spelling of the disk pipe stays the default's.
		amb := pipePod("ambiguous", "csi-smb")
		amb.Spec.Volumes[0].HostPath.Path = `\\.\pipe\\\csi-proxy-disk-v1`
		denied(t, c.Create(ctx, amb, client.DryRunAll), `[ambiguous-pipe-path]`)

		if err := c.Delete(ctx, &v1alpha1.PipeAccessPolicy{ObjectMeta: metav1.ObjectMeta{Name: "smb"}}); err != nil {
			t.Fatal(err)
		}
		waitRouting(t, c, "false")
		for name, obj := range hostProcessObjects("team-a") {
			if err := c.Create(ctx, obj, client.DryRunAll); err != nil {
				t.Errorf("%s after the policy went: %v, want admitted", name, err)
			}
		}
	})
}

// TestPrivilegedOptIn: an admin may still allow the flag; the policy is in
// force, its Ready message says what that grants, and privileged pods are
// admitted under it.
func TestPrivilegedOptIn(t *testing.T) {
	cl := startCluster(t)
	ctx := context.Background()
	cl.mustCreate(t, &v1alpha1.PipeAccessPolicy{ObjectMeta: metav1.ObjectMeta{Name: "opt-in"}, Spec: v1alpha1.PipeAccessPolicySpec{
		Pipes: []string{"csi-proxy-*"}, EnforcementAction: v1alpha1.Deny, Allow: v1alpha1.Allowances{Privileged: ptrTo(true)},
	}})
	waitReady(t, cl, "opt-in", metav1.ConditionTrue, "warning: spec.allow.privileged is true, but Windows ignores securityContext.privileged")
	p := pipePod("privileged", "team-a")
	p.Spec.Containers[0].SecurityContext = &corev1.SecurityContext{Privileged: ptrTo(true)}
	if err := cl.client.Create(ctx, p, client.DryRunAll); err != nil {
		t.Fatalf("a privileged pod under the opt-in: %v, want admitted", err)
	}
	var stored v1alpha1.PipeAccessPolicy
	if err := cl.client.Get(ctx, client.ObjectKey{Name: "opt-in"}, &stored); err != nil {
		t.Fatal(err)
	}
	cl.mustCreate(t, &v1alpha1.PipeAccessPolicy{ObjectMeta: metav1.ObjectMeta{Name: "defaults"}, Spec: v1alpha1.PipeAccessPolicySpec{
		Pipes: []string{"docker_engine"}, EnforcementAction: v1alpha1.Deny}})
	if err := cl.client.Get(ctx, client.ObjectKey{Name: "defaults"}, &stored); err != nil {
		t.Fatal(err)
	}
	if stored.Spec.Allow.Privileged == nil || *stored.Spec.Allow.Privileged {
		t.Errorf("the CRD defaults spec.allow.privileged to %v, want false", stored.Spec.Allow.Privileged)
	}
}

// TestHostProcessOutage: with nothing serving the webhook, HostProcess
// objects that mount no pipe, and pods with claims, are refused exactly
// while the routing says the cluster needs their review.
func TestHostProcessOutage(t *testing.T) {
	for _, withheld := range []bool{false, true} {
		cfg, err := webhookconfig.Load("../../../config/webhook/manifests.yaml")
		if err != nil {
			t.Fatal(err)
		}
		found := false
		for i := range cfg.Webhooks {
			for j := range cfg.Webhooks[i].MatchConditions {
				mc, name := &cfg.Webhooks[i].MatchConditions[j], cfg.Webhooks[i].Name
				if name == controller.HostProcessWebhook && mc.Name == controller.HostProcessCondition ||
					name == controller.ClaimsWebhook && mc.Name == controller.ClaimsCondition {
					mc.Expression = map[bool]string{false: "false", true: "true"}[withheld]
					found = true
				}
			}
		}
		if !found {
			t.Fatal("the shipped configuration has no HostProcess routing condition")
		}
		env := testenv.Start(t, testenv.Options{Scheme: scheme(t), Webhooks: testenv.WebhookOptions{
			ValidatingWebhooks: []*admissionregistrationv1.ValidatingWebhookConfiguration{cfg}}})
		ctx := context.Background()
		if err := env.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "team-a"}}); err != nil {
			t.Fatal(err)
		}
		claimPod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "reader"}, Spec: corev1.PodSpec{
			Containers: []corev1.Container{{Name: "app", Image: "app", VolumeMounts: []corev1.VolumeMount{{Name: "data", MountPath: `C:\data`}}}},
			Volumes: []corev1.Volume{{Name: "data", VolumeSource: corev1.VolumeSource{
				PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "data"}}}}}}
		switch err := env.Client.Create(ctx, claimPod, client.DryRunAll); {
		case withheld:
			refusedByOutage(t, "a pod with a claim while a protected PersistentVolume exists", err, controller.ClaimsWebhook)
		case err != nil:
			t.Errorf("a pod with a claim: %v, want admitted while no protected PersistentVolume exists", err)
		}
		for name, obj := range hostProcessObjects("team-a") {
			err := env.Client.Create(ctx, obj, client.DryRunAll)
			switch {
			case withheld:
				refusedByOutage(t, name, err, controller.HostProcessWebhook)
			case err != nil && strings.Contains(err.Error(), "failed calling webhook"):
				t.Errorf("%s: %v, want admitted while no policy withholds the allowance", name, err)
			}
		}
	}
}
