package webhook_test

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/pipeguard/pipeguard/policy"
	"github.com/pipeguard/pipeguard/webhook"
)

// claimPod mounts claim "data" as volume "data" in container "app".
func claimPod(mutate ...func(*corev1.Pod)) *corev1.Pod {
	return pod(diskPipe, append([]func(*corev1.Pod){func(p *corev1.Pod) {
		p.Spec.Volumes = []corev1.Volume{{Name: "data", VolumeSource: corev1.VolumeSource{
			PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "data"}}}}
		p.Spec.Containers[0].VolumeMounts = []corev1.VolumeMount{{Name: "data", MountPath: `C:\data`}}
	}}, mutate...)...)
}

// TestClaimsBoundToProtectedVolumes: a pod that mounts a claim bound to a
// PersistentVolume whose path reaches a pipe is decided as mounting that
// path, with the claim in the message; a claim bound to an ordinary path,
// or to none, is no fact.
func TestClaimsBoundToProtectedVolumes(t *testing.T) {
	e, err := policy.NewEngine(context.Background(), policy.Options{})
	if err != nil {
		t.Fatal(err)
	}
	claims := webhook.StaticClaims{
		"team-a/data": {Name: "pipe-pv", Source: "hostPath", Path: `\\?\pipe\csi-proxy-disk-v1`},
		"csi/data":    {Name: "pipe-pv", Source: "hostPath", Path: `\\?\pipe\csi-proxy-disk-v1`},
		"team-b/data": {Name: "logs", Source: "local", Path: `C:\var\log`},
	}
	h := webhook.NewHandler(webhook.Options{Engine: e, Namespaces: testNamespaces, Claims: claims})
	cases := map[string]struct {
		pod  *corev1.Pod
		want want
	}{
		"bound to a pipe":                    {claimPod(), denied(`[protected-pipe-mount] container "app" mounts \\.\pipe\csi-proxy-disk-v1 through volume "data", a PersistentVolumeClaim bound to a PersistentVolume at that path, but it is not HostProcess and namespace "team-a" is not allowed`)},
		"bound to a pipe, HostProcess":       {claimPod(hostProcessPod), allowed},
		"bound to a pipe, allowed namespace": {claimPod(inNamespace("csi")), allowed},
		"bound to an ordinary path":          {claimPod(inNamespace("team-b")), allowed},
		"unknown or unbound claim":           {claimPod(inNamespace("nowhere")), allowed},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			check(t, h.Handle(context.Background(), podRequest(t, tc.pod)), tc.want)
		})
	}
	t.Run("without claim lookups, a claim is no fact", func(t *testing.T) {
		check(t, newHandler(t).Handle(context.Background(), podRequest(t, claimPod())), allowed)
	})
}
