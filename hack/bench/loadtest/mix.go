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

	"github.com/pipeguard/pipeguard/internal/samplepods"
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
// (answered without rego), then CSI node pods allowed as HostProcess or by
// their namespace's label, pods with an ordinary host directory, and pods
// and Deployments that must be denied.
type mix struct {
	kinds []*kind
	slots []*kind // weighted round robin: request i is slots[i%len(slots)]
}

func newMix() (*mix, error) {
	denied := samplepods.CSINode()
	denied.Spec.Containers[2].SecurityContext = nil
	kinds := []*kind{
		{name: "pod-no-hostpath", weight: 11, allowed: true, body: review("Pod", samplepods.Plain())},
		{name: "deployment-no-hostpath", weight: 2, allowed: true, body: review("Deployment", deployment(samplepods.Plain()))},
		{name: "pod-hostpath-logs", weight: 1, allowed: true, body: review("Pod", logShipperPod())},
		{name: "pod-csi-hostprocess", weight: 2, allowed: true, body: review("Pod", samplepods.CSINode())},
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
	meta := obj.(metav1.Object)
	meta.SetNamespace(nsPlaceholder)
	raw, err := json.Marshal(obj)
	if err != nil {
		return nil
	}
	gvk := obj.GetObjectKind().GroupVersionKind()
	resource := map[string]string{"Pod": "pods", "Deployment": "deployments"}[kindName]
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

// logShipperPod mounts an ordinary host directory, which is no pipe, so
// it is admitted without rego.
func logShipperPod() *corev1.Pod {
	p := samplepods.Plain()
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
