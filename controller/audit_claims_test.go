package controller_test

import (
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/pipeguard/pipeguard/controller"
	"github.com/pipeguard/pipeguard/controller/inventory"
	"github.com/pipeguard/pipeguard/policy"
	"github.com/pipeguard/pipeguard/webhook"
)

// TestAuditFollowsClaims: the background audit decides a pod that mounts a
// claim bound to a PersistentVolume at a pipe as mounting the pipe, from
// stripped objects as its cache holds them; a claim bound to an ordinary
// PersistentVolume is no violation.
func TestAuditFollowsClaims(t *testing.T) {
	ctx := context.Background()
	s := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	pv := func(name, path string) *corev1.PersistentVolume {
		return &corev1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: corev1.PersistentVolumeSpec{
			PersistentVolumeSource: corev1.PersistentVolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: path}}}}
	}
	claim := func(name, volume string) *corev1.PersistentVolumeClaim {
		return &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: name}, Spec: corev1.PersistentVolumeClaimSpec{VolumeName: volume}}
	}
	pod := func(name, claim string) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: name}, Spec: corev1.PodSpec{
			Containers: []corev1.Container{{Name: "app", VolumeMounts: []corev1.VolumeMount{{Name: "data", MountPath: `C:\data`}}}},
			Volumes: []corev1.Volume{{Name: "data", VolumeSource: corev1.VolumeSource{
				PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: claim}}}}}}
	}
	var objs []runtime.Object
	for _, o := range []runtime.Object{
		pv("pipe-pv", `\\.\pipe\csi-proxy-disk-v1`), pv("logs", `C:\var\log`),
		claim("to-pipe", "pipe-pv"), claim("to-logs", "logs"), claim("unbound", ""),
		pod("reaches-pipe", "to-pipe"), pod("reaches-logs", "to-logs"), pod("waits", "unbound"),
	} {
		stripped, err := inventory.Strip(o)
		if err != nil {
			t.Fatal(err)
		}
		objs = append(objs, stripped.(runtime.Object))
	}
	c := fake.NewClientBuilder().WithScheme(s).WithRuntimeObjects(objs...).Build()
	engine, err := policy.NewEngine(ctx, policy.Options{})
	if err != nil {
		t.Fatal(err)
	}
	rep, err := controller.Audit(ctx, c, engine, webhook.StaticNamespaces{"team-a": {}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range rep.Results {
		got = append(got, string(r.Verdict)+" "+r.Kind+" "+r.Name)
	}
	// The PersistentVolume itself is denied too: it points at the pipe.
	if want := "deny Pod reaches-pipe\ndeny PersistentVolume pipe-pv"; strings.Join(got, "\n") != want {
		t.Fatalf("results:\n%s\nwant:\n%s", strings.Join(got, "\n"), want)
	}
}
