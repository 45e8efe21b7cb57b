package app_test

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/pipeguard/pipeguard/api/v1alpha1"
	"github.com/pipeguard/pipeguard/cmd/pipeguard-webhook/app"
	"github.com/pipeguard/pipeguard/controller"
)

// TestClaimsOnControlPlane: a PersistentVolume at a pipe, admitted while
// its policy only warned, makes the leader send pods with claims to the
// webhook, which denies one whose claim is bound to it; once the
// PersistentVolume is gone, pods with claims skip the webhook again.
func TestClaimsOnControlPlane(t *testing.T) {
	cl := startClusterWith(t, func(o *app.Options) { o.WebhookConfigName = "pipeguard" })
	ctx := context.Background()
	c := cl.client
	waitRouting := func(want string) {
		t.Helper()
		waitCondition(t, c, controller.ClaimsWebhook, controller.ClaimsCondition, want)
	}
	waitRouting("false")

	cl.mustCreate(t, &v1alpha1.PipeAccessPolicy{ObjectMeta: metav1.ObjectMeta{Name: "disk"}, Spec: v1alpha1.PipeAccessPolicySpec{
		Pipes: []string{"csi-proxy-disk-*"}, EnforcementAction: v1alpha1.Warn}})
	waitReady(t, cl, "disk", metav1.ConditionTrue, "")
	pv := &corev1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: "pipe-pv"}, Spec: corev1.PersistentVolumeSpec{
		Capacity:               corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")},
		AccessModes:            []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
		PersistentVolumeSource: corev1.PersistentVolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: diskPipe}}}}
	cl.mustCreate(t, pv) // admitted with a warning: the policy warns
	cl.mustCreate(t, &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "data"},
		Spec: corev1.PersistentVolumeClaimSpec{VolumeName: "pipe-pv", AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}}}})
	cl.updatePolicy(t, "disk", func(p *v1alpha1.PipeAccessPolicy) { p.Spec.EnforcementAction = v1alpha1.Deny })
	waitRouting("true")

	claimPod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "reader"}, Spec: corev1.PodSpec{
		Containers: []corev1.Container{{Name: "app", Image: "app", VolumeMounts: []corev1.VolumeMount{{Name: "data", MountPath: `C:\data`}}}},
		Volumes: []corev1.Volume{{Name: "data", VolumeSource: corev1.VolumeSource{
			PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "data"}}}}}}
	denied(t, c.Create(ctx, claimPod.DeepCopy(), client.DryRunAll),
		`[protected-pipe-mount] container "app" mounts \\.\pipe\csi-proxy-disk-v1 through volume "data", a PersistentVolumeClaim bound to a PersistentVolume at that path, but`)
	other := claimPod.DeepCopy()
	other.Spec.Volumes[0].PersistentVolumeClaim.ClaimName = "unbound"
	if err := c.Create(ctx, other, client.DryRunAll); err != nil {
		t.Errorf("a pod whose claim is bound to no protected PersistentVolume: %v, want admitted", err)
	}

	// No controller manager runs here to drop the PersistentVolume's
	// protection finalizer: drop it, so that the deletion completes (an
	// update of the PersistentVolume that only warn lets through).
	cl.updatePolicy(t, "disk", func(p *v1alpha1.PipeAccessPolicy) { p.Spec.EnforcementAction = v1alpha1.Warn })
	waitReady(t, cl, "disk", metav1.ConditionTrue, "")
	if err := c.Get(ctx, client.ObjectKey{Name: "pipe-pv"}, pv); err != nil {
		t.Fatal(err)
	}
	pv.Finalizers = nil
	if err := c.Update(ctx, pv); err != nil {
		t.Fatal(err)
	}
	if err := c.Delete(ctx, pv); err != nil {
		t.Fatal(err)
	}
	cl.updatePolicy(t, "disk", func(p *v1alpha1.PipeAccessPolicy) { p.Spec.EnforcementAction = v1alpha1.DryRun }) // a change: a new audit pass
	waitRouting("false")
}
