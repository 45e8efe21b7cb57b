package inventory_test

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/pipeguard/pipeguard/api/v1alpha1"
	"github.com/pipeguard/pipeguard/controller/inventory"
	"github.com/pipeguard/pipeguard/internal/testing/testenv"
)

func pipePod(ns, name string, privileged bool) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: corev1.PodSpec{
			Containers: []corev1.Container{{
				Name: "driver", Image: "busybox",
				VolumeMounts:    []corev1.VolumeMount{{Name: "pipe", MountPath: `C:\p`}},
				SecurityContext: &corev1.SecurityContext{Privileged: &privileged},
			}},
			Volumes: []corev1.Volume{{Name: "pipe", VolumeSource: corev1.VolumeSource{
				HostPath: &corev1.HostPathVolumeSource{Path: `//./PIPE/CSI-PROXY-DISK-V1`},
			}}},
		},
	}
}

// TestEvaluateCluster creates objects with no webhook registered and asks
// what admission would decide on each: only the violating ones are denied,
// with the words a user would read, and labels, policies in force and
// their last enforced versions are honoured.
func TestEvaluateCluster(t *testing.T) {
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	if err := v1alpha1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	env := testenv.Start(t, testenv.Options{Scheme: scheme, CRDDirectoryPaths: []string{filepath.Join("..", "..", "config", "crd", "bases")}})
	ctx := context.Background()
	c := env.Client
	create := func(o client.Object) {
		t.Helper()
		if err := c.Create(ctx, o); err != nil {
			t.Fatalf("creating %T %s: %v", o, o.GetName(), err)
		}
	}
	create(&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "team-a"}})
	create(&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "csi-smb", Labels: map[string]string{"pipeguard.io/allow-csi-proxy": "true"}}})
	create(pipePod("team-a", "bad", false))
	create(pipePod("team-a", "privileged", true))
	create(pipePod("csi-smb", "allowed", false))
	yes := true
	create(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "hostprocess"},
		Spec: corev1.PodSpec{HostNetwork: true, Containers: []corev1.Container{{Name: "node", Image: "node"}},
			SecurityContext: &corev1.PodSecurityContext{WindowsOptions: &corev1.WindowsSecurityContextOptions{HostProcess: &yes}}}})
	create(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "plain"},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "busybox"}}}})
	create(&corev1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{Name: "pipe-pv"},
		Spec: corev1.PersistentVolumeSpec{
			Capacity:               corev1.ResourceList{corev1.ResourceStorage: *resourceQuantity(t, "1Gi")},
			AccessModes:            []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			PersistentVolumeSource: corev1.PersistentVolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: `\\?\pipe\csi-proxy-smb-v1`}},
		},
	})

	t.Run("default policy", func(t *testing.T) {
		results, err := inventory.EvaluateCluster(ctx, env.Config, inventory.Options{PageSize: 2})
		if err != nil {
			t.Fatal(err)
		}
		got := summary(results)
		want := []string{
			"allow Pod csi-smb/allowed",
			"deny Pod team-a/bad",
			"allow Pod team-a/hostprocess",
			"allow Pod team-a/plain",
			"deny Pod team-a/privileged",
			"deny PersistentVolume pipe-pv",
		}
		if strings.Join(got, "\n") != strings.Join(want, "\n") {
			t.Fatalf("results:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
		}
		bad := results[1]
		wantMsg := `container "driver" mounts \\.\pipe\csi-proxy-disk-v1 through volume "pipe", but it is not HostProcess and namespace "team-a" is not allowed; to allow it, label the namespace pipeguard.io/allow-csi-proxy=true, or run the container as HostProcess`
		if len(bad.Deny) != 1 || bad.Deny[0].Rule != "protected-pipe-mount" || bad.Deny[0].Message != wantMsg || bad.Deny[0].Container != "driver" || bad.Deny[0].Action != "deny" {
			t.Errorf("team-a/bad deny = %+v, want one protected-pipe-mount violation %q", bad.Deny, wantMsg)
		}
	})

	t.Run("warn policy in force", func(t *testing.T) {
		create(&v1alpha1.PipeAccessPolicy{
			ObjectMeta: metav1.ObjectMeta{Name: "rollout"},
			Spec:       v1alpha1.PipeAccessPolicySpec{Pipes: []string{"csi-proxy-*"}, EnforcementAction: v1alpha1.Warn},
		})
		results, err := inventory.EvaluateCluster(ctx, env.Config, inventory.Options{})
		if err != nil {
			t.Fatal(err)
		}
		got := strings.Join(summary(results), "\n")
		// The default policy's namespace label is not part of a policy
		// that does not name it: csi-smb is not allowed any more.
		want := strings.Join([]string{
			"warn Pod csi-smb/allowed",
			"warn Pod team-a/bad",
			"allow Pod team-a/hostprocess",
			"allow Pod team-a/plain",
			"warn Pod team-a/privileged",
			"warn PersistentVolume pipe-pv",
		}, "\n")
		if got != want {
			t.Fatalf("results:\n%s\nwant:\n%s", got, want)
		}
	})

	// A pod that mounts a claim bound to a PersistentVolume at a pipe mounts
	// the pipe, whatever admission saw of the PersistentVolume.
	t.Run("a claim bound to a protected PersistentVolume", func(t *testing.T) {
		create(&corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "data"},
			Spec: corev1.PersistentVolumeClaimSpec{VolumeName: "pipe-pv", AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
				Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: *resourceQuantity(t, "1Gi")}}}})
		create(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "claims-pipe"},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "busybox", VolumeMounts: []corev1.VolumeMount{{Name: "data", MountPath: `C:\data`}}}},
				Volumes: []corev1.Volume{{Name: "data", VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "data"}}}}}})
		results, err := inventory.EvaluateCluster(ctx, env.Config, inventory.Options{PageSize: 1})
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range results {
			if r.Name != "claims-pipe" {
				continue
			}
			const want = `container "app" mounts \\.\pipe\csi-proxy-smb-v1 through volume "data", a PersistentVolumeClaim bound to a PersistentVolume at that path, but`
			if got := r.Violations(); len(got) != 1 || !strings.Contains(got[0].Message, want) {
				t.Fatalf("team-a/claims-pipe: %+v, want one violation containing %q", got, want)
			}
			return
		}
		t.Fatal("team-a/claims-pipe is not among the results")
	})

	// A HostProcess pod reaches every pipe without a mount: a policy that
	// withholds the allowance finds it among what already runs.
	t.Run("a policy withholding the HostProcess allowance", func(t *testing.T) {
		no := false
		create(&v1alpha1.PipeAccessPolicy{
			ObjectMeta: metav1.ObjectMeta{Name: "smb"},
			Spec: v1alpha1.PipeAccessPolicySpec{Pipes: []string{"csi-proxy-smb-*"}, EnforcementAction: v1alpha1.Deny,
				Allow: v1alpha1.Allowances{HostProcess: &no, Namespaces: []string{"csi-smb"}}},
		})
		results, err := inventory.EvaluateCluster(ctx, env.Config, inventory.Options{})
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range results {
			if r.Name != "hostprocess" {
				continue
			}
			if len(r.Deny) != 1 || r.Deny[0].Rule != "hostprocess-pipe-access" || !strings.Contains(r.Deny[0].Message, `PipeAccessPolicy "smb" withholds the HostProcess allowance`) {
				t.Fatalf("team-a/hostprocess: deny %+v, want one hostprocess-pipe-access violation of policy smb", r.Deny)
			}
			return
		}
		t.Fatal("team-a/hostprocess is not among the results")
	})

	t.Run("broken policy keeps its last enforced version", func(t *testing.T) {
		var p v1alpha1.PipeAccessPolicy
		if err := c.Get(ctx, client.ObjectKey{Name: "rollout"}, &p); err != nil {
			t.Fatal(err)
		}
		p.Status.LastEnforced = &v1alpha1.EnforcedVersion{Generation: p.Generation, Spec: *p.Spec.DeepCopy()}
		if err := c.Status().Update(ctx, &p); err != nil {
			t.Fatal(err)
		}
		p.Spec.EnforcementAction = v1alpha1.DryRun
		p.Spec.Rego = []v1alpha1.RegoModule{{Name: "broken.rego", Source: "package pipeguard.admission.broken\n\nviolation contains x if {"}}
		if err := c.Update(ctx, &p); err != nil {
			t.Fatal(err)
		}
		results, err := inventory.EvaluateCluster(ctx, env.Config, inventory.Options{})
		if err != nil {
			t.Fatal(err)
		}
		if got := summary(results)[1]; got != "warn Pod team-a/bad" {
			t.Errorf("team-a/bad = %q, want warn from the last enforced version", got)
		}
	})

	t.Run("no configuration", func(t *testing.T) {
		_, err := inventory.EvaluateCluster(ctx, nil, inventory.Options{})
		if err == nil || !strings.Contains(err.Error(), "no cluster configuration given") {
			t.Errorf("err = %v, want it to say no cluster configuration was given", err)
		}
	})
}

func summary(results []inventory.Result) []string {
	var out []string
	for _, r := range results {
		ref := r.Name
		if r.Namespace != "" {
			ref = r.Namespace + "/" + r.Name
		}
		out = append(out, fmt.Sprintf("%s %s %s", r.Verdict, r.Kind, ref))
	}
	return out
}

func resourceQuantity(t *testing.T, s string) *resource.Quantity {
	t.Helper()
	q, err := resource.ParseQuantity(s)
	if err != nil {
		t.Fatal(err)
	}
	return &q
}
