package main

import (
	"bytes"
	"encoding/json"
	"fmt"

	admissionv1 "k8s.io/api/admission/v1"
	appsv1 "k8s.io/api/apps/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
)

// Placeholders in a request template, overwritten per request. Each has the
// width of what replaces it, so a body is a copy with bytes patched in.
const (
	uidPlaceholder = "????????-????-????-????-????????????"
	nsPlaceholder  = "ns-#####"
	nsFormat       = "ns-%05d"
	maxNamespaces  = 100000
)

// Which namespaces a kind of request is sent to.
type nsChoice int

const (
	anyNamespace nsChoice = iota
	labelledNamespace
	unlabelledNamespace
)

// kind is one sort of AdmissionReview in the mix, with the decision both
// targets must reach.
type kind struct {
	name      string
	weight    int // out of the weights' sum
	namespace nsChoice
	allowed   bool
	body      []byte // AdmissionReview JSON with placeholders
	uidAt     []int
	nsAt      []int
}

// mix is the request mix: mostly pods and Deployments without a host path
// (answered before rego), then CSI node pods allowed as HostProcess or by
// their namespace's label, pods with an ordinary host directory, and pods
// and Deployments that must be denied.
type mix struct {
	kinds []*kind
	slots []*kind // weighted round robin: request i is slots[i%len(slots)]
}

func newMix() (*mix, error) {
	denied := csiNodePod()
	denied.Spec.Containers[2].SecurityContext = nil
	kinds := []*kind{
		{name: "pod-no-hostpath", weight: 11, allowed: true, body: review("Pod", plainPod())},
		{name: "deployment-no-hostpath", weight: 2, allowed: true, body: review("Deployment", deployment(plainPod()))},
		{name: "pod-hostpath-logs", weight: 1, allowed: true, body: review("Pod", logShipperPod())},
		{name: "pod-csi-hostprocess", weight: 2, allowed: true, body: review("Pod", csiNodePod())},
		{name: "pod-csi-labelled-ns", weight: 1, namespace: labelledNamespace, allowed: true, body: review("Pod", denied)},
		{name: "pod-csi-denied", weight: 2, namespace: unlabelledNamespace, body: review("Pod", denied)},
		{name: "deployment-csi-denied", weight: 1, namespace: unlabelledNamespace, body: review("Deployment", deployment(denied))},
	}
	m := &mix{kinds: kinds}
	for _, k := range kinds {
		if k.body == nil {
			return nil, fmt.Errorf("internal error: cannot encode the %s request", k.name)
		}
		k.uidAt = offsets(k.body, uidPlaceholder)
		k.nsAt = offsets(k.body, nsPlaceholder)
		if len(k.uidAt) != 1 || len(k.nsAt) < 2 {
			return nil, fmt.Errorf("internal error: %s request has %d uid and %d namespace slots", k.name, len(k.uidAt), len(k.nsAt))
		}
		for range k.weight {
			m.slots = append(m.slots, k)
		}
	}
	return m, nil
}

// body returns request seq of the mix for namespaces ns-00000…ns-<n-1>, and
// the kind it is. Every tenth namespace carries the allowance label.
func (m *mix) body(seq uint64, n int, uid string) ([]byte, *kind) {
	k := m.slots[seq%uint64(len(m.slots))]
	ns := int((seq * 2654435761) % uint64(n))
	switch {
	case k.namespace == labelledNamespace:
		ns -= ns % 10
	case k.namespace == unlabelledNamespace && ns%10 == 0:
		ns = (ns + 1) % n
		if ns%10 == 0 {
			ns = 1
		}
	}
	b := bytes.Clone(k.body)
	name := fmt.Appendf(make([]byte, 0, len(nsPlaceholder)), nsFormat, ns)
	for _, at := range k.nsAt {
		copy(b[at:], name)
	}
	copy(b[k.uidAt[0]:], uid)
	return b, k
}

func offsets(b []byte, s string) []int {
	var out []int
	for i := 0; ; {
		j := bytes.Index(b[i:], []byte(s))
		if j < 0 {
			return out
		}
		out = append(out, i+j)
		i += j + len(s)
	}
}

// review wraps obj in an AdmissionReview v1 CREATE request.
func review(kindName string, obj runtime.Object) []byte {
	raw, err := json.Marshal(obj)
	if err != nil {
		return nil
	}
	gvk := obj.GetObjectKind().GroupVersionKind()
	resource := map[string]string{"Pod": "pods", "Deployment": "deployments"}[kindName]
	meta := obj.(metav1.Object)
	ar := admissionv1.AdmissionReview{
		TypeMeta: metav1.TypeMeta{APIVersion: "admission.k8s.io/v1", Kind: "AdmissionReview"},
		Request: &admissionv1.AdmissionRequest{
			UID:       types.UID(uidPlaceholder),
			Kind:      metav1.GroupVersionKind{Group: gvk.Group, Version: gvk.Version, Kind: gvk.Kind},
			Resource:  metav1.GroupVersionResource{Group: gvk.Group, Version: gvk.Version, Resource: resource},
			Namespace: nsPlaceholder, Name: meta.GetName(), Operation: admissionv1.Create,
			UserInfo: authenticationv1.UserInfo{Username: "system:serviceaccount:kube-system:replicaset-controller",
				Groups: []string{"system:serviceaccounts", "system:serviceaccounts:kube-system", "system:authenticated"}},
			Object:  runtime.RawExtension{Raw: raw},
			Options: runtime.RawExtension{Raw: []byte(`{"kind":"CreateOptions","apiVersion":"meta.k8s.io/v1"}`)},
		},
	}
	out, err := json.Marshal(ar)
	if err != nil {
		return nil
	}
	return out
}

// csiNodePod is a Windows CSI node plugin pod: three containers, one of
// them HostProcess with four pipe mounts, plus the kubelet directories.
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
		ObjectMeta: metav1.ObjectMeta{Name: "csi-azuredisk-node-win-x7k2p", Namespace: nsPlaceholder, Labels: map[string]string{"app": "csi-azuredisk-node-win"}},
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

// plainPod is an ordinary application pod: no host path volume.
func plainPod() *corev1.Pod {
	p := csiNodePod()
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

// logShipperPod mounts an ordinary host directory: rego runs and finds no
// pipe.
func logShipperPod() *corev1.Pod {
	p := plainPod()
	p.Name = "fluent-bit-win-8kq2m"
	p.Spec.Volumes = append(p.Spec.Volumes, corev1.Volume{Name: "logs", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: `C:\var\log`}}})
	p.Spec.Containers[0].VolumeMounts = append(p.Spec.Containers[0].VolumeMounts, corev1.VolumeMount{Name: "logs", MountPath: `C:\var\log`, ReadOnly: true})
	return p
}

// deployment wraps a pod's spec in a Deployment.
func deployment(p *corev1.Pod) *appsv1.Deployment {
	replicas := int32(3)
	return &appsv1.Deployment{
		TypeMeta:   metav1.TypeMeta{APIVersion: "apps/v1", Kind: "Deployment"},
		ObjectMeta: metav1.ObjectMeta{Name: p.Labels["app"], Namespace: p.Namespace, Labels: p.Labels},
		Spec: appsv1.DeploymentSpec{
			Replicas: &replicas,
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": p.Labels["app"]}},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: p.Labels}, Spec: p.Spec},
		},
	}
}
