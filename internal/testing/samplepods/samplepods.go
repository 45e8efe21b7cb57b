// Package samplepods holds realistic pods that benchmarks, load tools and
// tests review: a Windows CSI node plugin pod, an ordinary application pod,
// and a pod with many pipe mounts.
// Their namespace is "kube-system"; callers move them where they need.
package samplepods

import (
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// CSINode is a Windows CSI node plugin pod: three containers, one of
// them HostProcess with four pipe mounts, plus the kubelet directories.
func CSINode() *corev1.Pod {
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

// Plain is an ordinary application pod: no host path volume.
func Plain() *corev1.Pod {
	p := CSINode()
	p.Name, p.Labels = "web-5d8f7c9b4-q2x8z", map[string]string{"app": "web", "pod-template-hash": "5d8f7c9b4"}
	p.Spec.ServiceAccountName = "web"
	p.Spec.Volumes = []corev1.Volume{
		{Name: "cache", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
		{Name: "config", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: "web-config"}}}},
	}
	for i := range p.Spec.Containers {
		p.Spec.Containers[i].VolumeMounts = []corev1.VolumeMount{{Name: "cache", MountPath: `C:\cache`}, {Name: "config", MountPath: `C:\config`, ReadOnly: true}}
		p.Spec.Containers[i].SecurityContext = nil
	}
	return p
}

// ManyPipeMounts is a pod in namespace ns whose one container, "driver",
// mounts CSI Proxy's disk pipe through n hostPath volumes: pipe-000,
// pipe-001 and on. It carries no allowance, so each mount is a violation.
func ManyPipeMounts(name, ns string, n int) *corev1.Pod {
	no := false
	c := corev1.Container{Name: "driver", Image: "driver"}
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: corev1.PodSpec{ServiceAccountName: "default", AutomountServiceAccountToken: &no}}
	for i := range n {
		v := fmt.Sprintf("pipe-%03d", i)
		p.Spec.Volumes = append(p.Spec.Volumes, corev1.Volume{Name: v, VolumeSource: corev1.VolumeSource{
			HostPath: &corev1.HostPathVolumeSource{Path: `\\.\pipe\csi-proxy-disk-v1`},
		}})
		c.VolumeMounts = append(c.VolumeMounts, corev1.VolumeMount{Name: v, MountPath: fmt.Sprintf(`C:\pipe\%03d`, i)})
	}
	p.Spec.Containers = []corev1.Container{c}
	return p
}

// ThroughVolumes names the first n mounts of ManyPipeMounts as a message
// lists them: "a, b and c".
func ThroughVolumes(n int) string {
	var ts []string
	for i := range n {
		ts = append(ts, fmt.Sprintf(`\\.\pipe\csi-proxy-disk-v1 through volume "pipe-%03d"`, i))
	}
	if n == 1 {
		return ts[0]
	}
	return strings.Join(ts[:n-1], ", ") + " and " + ts[n-1]
}
