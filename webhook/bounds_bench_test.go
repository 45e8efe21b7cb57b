package webhook_test

import (
	"fmt"
	"testing"

	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// manyMountsPod is a pod in team-a with volumes host-path volumes, each on
// its own CSI Proxy pipe, and mounts volumeMounts of them spread over as
// few containers as hold them (one container mounts each volume at most
// once), changed by mutate: the shape of a pod at the bounds.
func manyMountsPod(volumes, mounts int, mutate ...func(*corev1.Pod)) *corev1.Pod {
	p := &corev1.Pod{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
		ObjectMeta: metav1.ObjectMeta{Name: "many", Namespace: "team-a"},
	}
	for i := range volumes {
		p.Spec.Volumes = append(p.Spec.Volumes, corev1.Volume{
			Name:         fmt.Sprintf("pipe-%04d", i),
			VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: fmt.Sprintf(`\\.\pipe\csi-proxy-disk-v%d`, i)}},
		})
	}
	for i := 0; i < mounts; i++ {
		if i%volumes == 0 {
			p.Spec.Containers = append(p.Spec.Containers, corev1.Container{Name: fmt.Sprintf("c-%04d", i/volumes), Image: "app"})
		}
		c := &p.Spec.Containers[len(p.Spec.Containers)-1]
		v := p.Spec.Volumes[i%volumes].Name
		c.VolumeMounts = append(c.VolumeMounts, corev1.VolumeMount{Name: v, MountPath: `C:\` + v})
	}
	for _, m := range mutate {
		m(p)
	}
	return p
}

// BenchmarkReviewMounts: a denied pod with n pipe mounts, every review
// evaluated by rego. The cost per mount (cpu-ns/mount) must stay flat as
// n grows to the bound: a review is linear in the object.
func BenchmarkReviewMounts(b *testing.B) {
	for _, n := range []int{16, 64, 256, 1024} {
		b.Run(fmt.Sprintf("n=%d", n), func(b *testing.B) {
			volumes := min(n, 256)
			req := podRequest(b, manyMountsPod(volumes, n))
			benchmarkReviewPer(b, req, false, 0, float64(n), "mount")
		})
	}
}

// BenchmarkReviewMountsUpdate: an UPDATE of the pod of BenchmarkReviewMounts
// (its old object the same pod): every mount is compared with the old
// ones, which must stay linear too.
func BenchmarkReviewMountsUpdate(b *testing.B) {
	for _, n := range []int{16, 64, 256, 1024} {
		b.Run(fmt.Sprintf("n=%d", n), func(b *testing.B) {
			p := manyMountsPod(min(n, 256), n)
			req := podRequest(b, p)
			req.Operation = admissionv1.Update
			req.OldObject.Raw = mustJSON(b, p)
			benchmarkReviewPer(b, req, true, 0, float64(n), "mount")
		})
	}
}
