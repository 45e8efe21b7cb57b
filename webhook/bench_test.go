package webhook_test

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"
)

// csiNodePod is a typical Windows CSI node plugin pod: three containers, one
// of them HostProcess with four pipe mounts, plus the usual kubelet
// directories.
func csiNodePod() *corev1.Pod {
	hp := true
	pipe := func(name string) corev1.Volume {
		return corev1.Volume{Name: name, VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: `\\.\pipe\` + name}}}
	}
	dir := func(name, path string) corev1.Volume {
		return corev1.Volume{Name: name, VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: path}}}
	}
	mount := func(name string) corev1.VolumeMount {
		return corev1.VolumeMount{Name: name, MountPath: `C:\mnt\` + name}
	}
	return &corev1.Pod{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
		ObjectMeta: metav1.ObjectMeta{Name: "csi-azuredisk-node-win-x7k2p", Namespace: "kube-system", Labels: map[string]string{"app": "csi-azuredisk-node-win"}},
		Spec: corev1.PodSpec{
			ServiceAccountName: "csi-azuredisk-node-sa",
			NodeSelector:       map[string]string{"kubernetes.io/os": "windows"},
			Volumes: []corev1.Volume{
				pipe("csi-proxy-disk-v1"), pipe("csi-proxy-filesystem-v1"), pipe("csi-proxy-volume-v1"), pipe("csi-proxy-system-v1alpha1"),
				dir("kubelet-dir", `C:\var\lib\kubelet\`), dir("plugin-dir", `C:\var\lib\kubelet\plugins\disk.csi.azure.com\`),
				dir("registration-dir", `C:\var\lib\kubelet\plugins_registry\`),
			},
			Containers: []corev1.Container{
				{Name: "liveness-probe", Image: "livenessprobe:v2.13.0", VolumeMounts: []corev1.VolumeMount{mount("plugin-dir")}},
				{Name: "node-driver-registrar", Image: "csi-node-driver-registrar:v2.11.0", VolumeMounts: []corev1.VolumeMount{mount("plugin-dir"), mount("registration-dir")}},
				{
					Name: "azuredisk", Image: "azuredisk-csi:v1.30.0",
					SecurityContext: &corev1.SecurityContext{WindowsOptions: &corev1.WindowsSecurityContextOptions{HostProcess: &hp}},
					VolumeMounts: []corev1.VolumeMount{mount("kubelet-dir"), mount("plugin-dir"),
						mount("csi-proxy-disk-v1"), mount("csi-proxy-filesystem-v1"), mount("csi-proxy-volume-v1"), mount("csi-proxy-system-v1alpha1")},
				},
			},
		},
	}
}

// plainPod has no host path volume: the handler must answer without rego.
func plainPod() *corev1.Pod {
	p := csiNodePod()
	p.Name, p.Namespace = "web-5d8f7", "team-a"
	p.Spec.Volumes = []corev1.Volume{{Name: "cache", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}}
	for i := range p.Spec.Containers {
		p.Spec.Containers[i].VolumeMounts = []corev1.VolumeMount{{Name: "cache", MountPath: `C:\cache`}}
		p.Spec.Containers[i].SecurityContext = nil
	}
	return p
}

func benchmarkReview(b *testing.B, req admission.Request, wantAllowed bool) {
	h := newHandler(b)
	ctx := context.Background()
	if resp := h.Handle(ctx, req); resp.Allowed != wantAllowed {
		b.Fatalf("allowed = %v, want %v: %+v", resp.Allowed, wantAllowed, resp.Result)
	}
	b.ReportAllocs()
	b.ResetTimer()
	start := processCPU()
	for b.Loop() {
		h.Handle(ctx, req)
	}
	if cpu := processCPU() - start; cpu > 0 {
		b.ReportMetric(float64(cpu)/float64(b.N), "cpu-ns/op")
	}
}

// BenchmarkReviewCSINodePod: decode, facts, namespace lookup and rego for a
// CSI node pod with four pipe mounts that is allowed (HostProcess).
func BenchmarkReviewCSINodePod(b *testing.B) {
	benchmarkReview(b, podRequest(b, csiNodePod()), true)
}

// BenchmarkReviewDeniedPod: the same pod without HostProcess in an
// unlabelled namespace: four violations with messages.
func BenchmarkReviewDeniedPod(b *testing.B) {
	p := csiNodePod()
	p.Namespace = "team-a"
	p.Spec.Containers[2].SecurityContext = nil
	benchmarkReview(b, podRequest(b, p), false)
}

// BenchmarkReviewPodWithoutHostPath: the common case on a busy cluster.
func BenchmarkReviewPodWithoutHostPath(b *testing.B) {
	benchmarkReview(b, podRequest(b, plainPod()), true)
}
