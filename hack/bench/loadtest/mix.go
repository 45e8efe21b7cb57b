package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
	appsv1 "k8s.io/api/apps/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/pipeguard/pipeguard/internal/testing/samplepods"
)

// Placeholders in a request template, each as wide as what overwrites it
// per request; tokenPlaceholder makes the reviews of a unique mix unique.
const (
	uidPlaceholder   = "????????-????-????-????-????????????"
	nsPlaceholder    = "ns-#####"
	nsFormat         = "ns-%05d"
	tokenPlaceholder = "~~~~~~~~"
	tokenFormat      = "%08x"
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
	name                 string
	weight               int // out of the weights' sum
	namespace            nsChoice
	allowed              bool
	body                 []byte // AdmissionReview JSON with placeholders
	uidAt, nsAt, tokenAt []int
}

// The mixes of reviews, in the order a round runs them (method.md says
// what each holds): MixDeployed is what a cluster sends; MixPipes only the
// reviews with a pipe mount, each unique, so that rego decides every one;
// MixDenials only the pods and Deployments that must be denied, each
// unique.
const MixDeployed, MixPipes, MixDenials = "deployed", "pipes", "denials"

var mixes = []string{MixDeployed, MixPipes, MixDenials}

// mix is a request mix.
type mix struct {
	kinds []*kind
	slots []*kind // weighted round robin: request i is slots[i%len(slots)]
}

func newMix(name string) (*mix, error) {
	denied := samplepods.CSINode()
	denied.Spec.Containers[2].SecurityContext = nil
	// In a unique mix, each review has a ServiceAccount and pipe volume
	// names of its own: each request overwrites tokenPlaceholder.
	unique := name != MixDeployed
	pipe := func(p *corev1.Pod) *corev1.Pod {
		if unique {
			p.Spec.ServiceAccountName += "-" + tokenPlaceholder
			renameVolumes(p, "-"+tokenPlaceholder, func(v corev1.Volume) bool {
				return v.HostPath != nil && strings.HasPrefix(v.HostPath.Path, `\\.\pipe\`)
			})
		}
		return p
	}
	all := []*kind{
		{name: "pod-no-hostpath", weight: 11, allowed: true, body: review("Pod", samplepods.Plain())},
		{name: "deployment-no-hostpath", weight: 2, allowed: true, body: review("Deployment", deployment(samplepods.Plain()))},
		{name: "pod-hostpath-logs", weight: 1, allowed: true, body: review("Pod", logShipperPod())},
		{name: "pod-csi-hostprocess", weight: 2, allowed: true, body: review("Pod", pipe(samplepods.CSINode()))},
		{name: "pod-csi-labelled-ns", weight: 1, namespace: labelledNamespace, allowed: true, body: review("Pod", pipe(denied.DeepCopy()))},
		{name: "pod-csi-denied", weight: 2, namespace: unlabelledNamespace, body: review("Pod", pipe(denied.DeepCopy()))},
		{name: "deployment-csi-denied", weight: 1, namespace: unlabelledNamespace, body: review("Deployment", deployment(pipe(denied.DeepCopy())))},
	}
	from, ok := map[string]int{MixDeployed: 0, MixPipes: 3, MixDenials: 5}[name]
	if !ok {
		return nil, fmt.Errorf("mix %q is unknown; use %s", name, strings.Join(mixes, ", "))
	}
	m := &mix{kinds: all[from:]}
	for _, k := range m.kinds {
		k.uidAt = offsets(k.body, uidPlaceholder)
		k.nsAt = offsets(k.body, nsPlaceholder)
		k.tokenAt = offsets(k.body, tokenPlaceholder)
		if len(k.uidAt) != 1 || len(k.nsAt) < 2 || unique != (len(k.tokenAt) > 0) {
			return nil, fmt.Errorf("internal error: %s request has %d uid, %d namespace and %d token slots", k.name, len(k.uidAt), len(k.nsAt), len(k.tokenAt))
		}
		for range k.weight {
			m.slots = append(m.slots, k)
		}
	}
	return m, nil
}

// renameVolumes appends suffix to the names of p's volumes that match, and
// to their mounts.
func renameVolumes(p *corev1.Pod, suffix string, match func(corev1.Volume) bool) {
	renamed := map[string]bool{}
	for i, v := range p.Spec.Volumes {
		if renamed[v.Name] = match(v); renamed[v.Name] {
			p.Spec.Volumes[i].Name += suffix
		}
	}
	for _, c := range p.Spec.Containers {
		for j, vm := range c.VolumeMounts {
			if renamed[vm.Name] {
				c.VolumeMounts[j].Name += suffix
			}
		}
	}
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
	token := fmt.Appendf(make([]byte, 0, len(tokenPlaceholder)), tokenFormat, uint32(seq))
	for _, at := range k.tokenAt {
		copy(b[at:], token)
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

// review wraps obj, shaped as kube-apiserver sends it (see apiServerShape),
// in an AdmissionReview v1 CREATE request.
func review(kindName string, obj runtime.Object) []byte {
	meta := obj.(metav1.Object)
	meta.SetNamespace(nsPlaceholder)
	apiServerShape(obj)
	raw, err := json.Marshal(obj)
	if err != nil {
		panic(err) // a pod or a Deployment always encodes
	}
	gvk := obj.GetObjectKind().GroupVersionKind()
	k := metav1.GroupVersionKind{Group: gvk.Group, Version: gvk.Version, Kind: gvk.Kind}
	r := metav1.GroupVersionResource{Group: gvk.Group, Version: gvk.Version, Resource: map[string]string{"Pod": "pods", "Deployment": "deployments"}[kindName]}
	ar := admissionv1.AdmissionReview{
		TypeMeta: metav1.TypeMeta{APIVersion: "admission.k8s.io/v1", Kind: "AdmissionReview"},
		Request: &admissionv1.AdmissionRequest{
			UID: types.UID(uidPlaceholder), Kind: k, Resource: r, RequestKind: &k, RequestResource: &r,
			Namespace: nsPlaceholder, Name: meta.GetName(), Operation: admissionv1.Create,
			UserInfo: authenticationv1.UserInfo{Username: "system:serviceaccount:kube-system:replicaset-controller",
				UID:    "3b7c1f0e-8f7a-4a51-9d0c-2c3e4f5a6b7c",
				Groups: []string{"system:serviceaccounts", "system:serviceaccounts:kube-system", "system:authenticated"}},
			Object:  runtime.RawExtension{Raw: raw},
			Options: runtime.RawExtension{Raw: []byte(`{"kind":"CreateOptions","apiVersion":"meta.k8s.io/v1"}`)},
		},
	}
	out, err := json.Marshal(ar)
	if err != nil {
		panic(err)
	}
	return out
}

// apiServerShape gives obj what kube-apiserver has added by the time it
// asks a webhook about a CREATE (an owner, a UID, managedFields, defaults,
// the token volume, a status), so that decoding costs what it does there.
func apiServerShape(obj runtime.Object) {
	created := metav1.NewTime(time.Date(2026, 11, 24, 9, 30, 0, 0, time.UTC))
	yes, grace, mode, expiry, tolerate := true, int64(30), int32(420), int64(3607), int64(300)
	meta := obj.(metav1.Object)
	meta.SetUID("7c4b1f4e-0d0a-4a5e-9f43-3b8a5c2d9e11")
	meta.SetCreationTimestamp(created)
	fields := `{"f:metadata":{"f:generateName":{},"f:labels":{".":{},"f:app":{},"f:pod-template-hash":{}},"f:ownerReferences":{".":{},"k:{\"uid\":\"0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0\"}":{}}},"f:spec":{"f:containers":{"k:{\"name\":\"app\"}":{".":{},"f:image":{},"f:imagePullPolicy":{},"f:name":{},"f:resources":{".":{},"f:limits":{".":{},"f:memory":{}},"f:requests":{".":{},"f:cpu":{},"f:memory":{}}},"f:securityContext":{".":{},"f:windowsOptions":{".":{},"f:hostProcess":{}}},"f:terminationMessagePath":{},"f:terminationMessagePolicy":{},"f:volumeMounts":{}}},"f:dnsPolicy":{},"f:enableServiceLinks":{},"f:nodeSelector":{},"f:restartPolicy":{},"f:schedulerName":{},"f:securityContext":{},"f:serviceAccount":{},"f:serviceAccountName":{},"f:terminationGracePeriodSeconds":{},"f:tolerations":{},"f:volumes":{}}}`
	meta.SetManagedFields([]metav1.ManagedFieldsEntry{{Manager: "kube-controller-manager", Operation: metav1.ManagedFieldsOperationUpdate,
		APIVersion: "v1", Time: &created, FieldsType: "FieldsV1", FieldsV1: &metav1.FieldsV1{Raw: []byte(fields)}}})
	var spec *corev1.PodSpec
	switch o := obj.(type) {
	case *corev1.Pod:
		o.GenerateName = o.Name[:strings.LastIndexByte(o.Name, '-')+1]
		o.Annotations = map[string]string{"kubectl.kubernetes.io/restartedAt": "2026-11-20T08:00:00Z"}
		o.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: strings.TrimSuffix(o.GenerateName, "-"),
			UID: "0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0", Controller: &yes, BlockOwnerDeletion: &yes}}
		o.Status = corev1.PodStatus{Phase: corev1.PodPending, QOSClass: corev1.PodQOSBurstable}
		spec = &o.Spec
	case *appsv1.Deployment:
		o.Annotations = map[string]string{"deployment.kubernetes.io/revision": "1"}
		o.Generation = 1
		surge := intstr.FromString("25%")
		o.Spec.Strategy = appsv1.DeploymentStrategy{Type: appsv1.RollingUpdateDeploymentStrategyType,
			RollingUpdate: &appsv1.RollingUpdateDeployment{MaxSurge: &surge, MaxUnavailable: &surge}}
		revisions, deadline := int32(10), int32(600)
		o.Spec.RevisionHistoryLimit, o.Spec.ProgressDeadlineSeconds = &revisions, &deadline
		spec = &o.Spec.Template.Spec
	}
	spec.DeprecatedServiceAccount = spec.ServiceAccountName
	spec.RestartPolicy, spec.DNSPolicy, spec.SchedulerName = corev1.RestartPolicyAlways, corev1.DNSClusterFirst, "default-scheduler"
	spec.TerminationGracePeriodSeconds, spec.EnableServiceLinks = &grace, &yes
	spec.SecurityContext = &corev1.PodSecurityContext{}
	spec.Tolerations = []corev1.Toleration{
		{Key: "node.kubernetes.io/not-ready", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute, TolerationSeconds: &tolerate},
		{Key: "node.kubernetes.io/unreachable", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute, TolerationSeconds: &tolerate},
	}
	spec.Volumes = append(spec.Volumes, corev1.Volume{Name: "kube-api-access-9xk2d", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{
		DefaultMode: &mode,
		Sources: []corev1.VolumeProjection{
			{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{Path: "token", ExpirationSeconds: &expiry}},
			{ConfigMap: &corev1.ConfigMapProjection{LocalObjectReference: corev1.LocalObjectReference{Name: "kube-root-ca.crt"}, Items: []corev1.KeyToPath{{Key: "ca.crt", Path: "ca.crt"}}}},
		},
	}}})
	for i := range spec.Containers {
		c := &spec.Containers[i]
		c.ImagePullPolicy, c.TerminationMessagePath, c.TerminationMessagePolicy = corev1.PullIfNotPresent, "/dev/termination-log", corev1.TerminationMessageReadFile
		c.Resources = corev1.ResourceRequirements{
			Limits:   corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("2Gi")},
			Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("10m"), corev1.ResourceMemory: resource.MustParse("40Mi")},
		}
		c.VolumeMounts = append(c.VolumeMounts, corev1.VolumeMount{Name: "kube-api-access-9xk2d", MountPath: "/var/run/secrets/kubernetes.io/serviceaccount", ReadOnly: true})
	}
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
