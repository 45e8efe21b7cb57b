package admission_test

import (
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

// largeSpec is a pod spec of v ordinary hostPath volumes, each mounted
// with a subPath by every one of c containers.
func largeSpec(v, c int) corev1.PodSpec {
	var spec corev1.PodSpec
	for i := range v {
		spec.Volumes = append(spec.Volumes, corev1.Volume{Name: fmt.Sprintf("host-%03d", i),
			VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: fmt.Sprintf("/var/lib/kubelet/pods/volume-%03d", i)}}})
	}
	for j := range c {
		ctr := corev1.Container{Name: fmt.Sprintf("c-%02d", j), Image: "app"}
		for i := range v {
			ctr.VolumeMounts = append(ctr.VolumeMounts, corev1.VolumeMount{Name: fmt.Sprintf("host-%03d", i),
				MountPath: fmt.Sprintf("/mnt/%03d", i), SubPath: fmt.Sprintf("logs/container-%02d", j)})
		}
		spec.Containers = append(spec.Containers, ctr)
	}
	return spec
}

// A large pod of ordinary host paths stays within the API server's CEL
// cost budget: an expression that ran out of it would reject the request,
// with failurePolicy Fail, even while the webhook is up.
func TestLargePodsStayWithinTheCostBudget(t *testing.T) {
	f := loadFilter(t)
	for _, size := range [][2]int{{10, 10}, {50, 20}, {100, 30}, {200, 50}} {
		for _, k := range podKinds {
			if f.sends(t, k, k.wrap(largeSpec(size[0], size[1]))) {
				t.Errorf("%s with %d ordinary volumes and %d containers goes to the webhook", k.gvk.Kind, size[0], size[1])
			}
		}
	}
}
