package kinds

import (
	"reflect"
	"slices"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Object is a typed Kubernetes object; every controller-runtime
// client.Object is one, and one is a client.Object.
type Object interface {
	metav1.Object
	runtime.Object
}

// ObjectList is a typed list of Kubernetes objects; every controller-runtime
// client.ObjectList is one, and one is a client.ObjectList.
type ObjectList interface {
	metav1.ListInterface
	runtime.Object
}

// Layout says where in an object of a kind admission finds what it reads:
// the pod spec, or a PersistentVolume's host path.
type Layout int

// The layouts of reviewed objects, one per type of package webhook/decode.
const (
	// LayoutPod: spec is the pod spec.
	LayoutPod Layout = iota + 1
	// LayoutPodTemplate: the pod spec is template.spec.
	LayoutPodTemplate
	// LayoutWorkload: the pod spec is spec.template.spec, which a
	// ReplicationController may lack.
	LayoutWorkload
	// LayoutCronJob: the pod spec is spec.jobTemplate.spec.template.spec.
	LayoutCronJob
	// LayoutPersistentVolume: no pod spec; spec.hostPath.path or
	// spec.local.path is the host path.
	LayoutPersistentVolume
)

// Kind is one kind of object pipeguard reviews for pipe mounts.
type Kind struct {
	// GVK is the kind's group, the version pipeguard reads and the kind.
	GVK schema.GroupVersionKind
	// Resource is the kind's resource, its plural in lower case.
	Resource string
	// Subresources are the subresources of Resource whose updates the
	// webhook also reviews, because they change what a pod mounts.
	Subresources []string
	// Namespaced is false for a cluster-scoped kind.
	Namespaced bool
	// Layout says where the pod spec or host path sits.
	Layout Layout
	// New returns an empty object of the kind.
	New func() Object
	// NewList returns an empty list of objects of the kind.
	NewList func() ObjectList
}

// table is every reviewed kind once, in the order in which the inventory
// and the audit report results. Kind names are unique across groups:
// callers key on them.
var table = []Kind{
	{GVK: core("Pod"), Resource: "pods", Subresources: []string{"ephemeralcontainers"}, Namespaced: true, Layout: LayoutPod,
		New: func() Object { return &corev1.Pod{} }, NewList: func() ObjectList { return &corev1.PodList{} }},
	{GVK: core("PodTemplate"), Resource: "podtemplates", Namespaced: true, Layout: LayoutPodTemplate,
		New: func() Object { return &corev1.PodTemplate{} }, NewList: func() ObjectList { return &corev1.PodTemplateList{} }},
	{GVK: core("ReplicationController"), Resource: "replicationcontrollers", Namespaced: true, Layout: LayoutWorkload,
		New: func() Object { return &corev1.ReplicationController{} }, NewList: func() ObjectList { return &corev1.ReplicationControllerList{} }},
	{GVK: apps("Deployment"), Resource: "deployments", Namespaced: true, Layout: LayoutWorkload,
		New: func() Object { return &appsv1.Deployment{} }, NewList: func() ObjectList { return &appsv1.DeploymentList{} }},
	{GVK: apps("ReplicaSet"), Resource: "replicasets", Namespaced: true, Layout: LayoutWorkload,
		New: func() Object { return &appsv1.ReplicaSet{} }, NewList: func() ObjectList { return &appsv1.ReplicaSetList{} }},
	{GVK: apps("StatefulSet"), Resource: "statefulsets", Namespaced: true, Layout: LayoutWorkload,
		New: func() Object { return &appsv1.StatefulSet{} }, NewList: func() ObjectList { return &appsv1.StatefulSetList{} }},
	{GVK: apps("DaemonSet"), Resource: "daemonsets", Namespaced: true, Layout: LayoutWorkload,
		New: func() Object { return &appsv1.DaemonSet{} }, NewList: func() ObjectList { return &appsv1.DaemonSetList{} }},
	{GVK: batch("Job"), Resource: "jobs", Namespaced: true, Layout: LayoutWorkload,
		New: func() Object { return &batchv1.Job{} }, NewList: func() ObjectList { return &batchv1.JobList{} }},
	{GVK: batch("CronJob"), Resource: "cronjobs", Namespaced: true, Layout: LayoutCronJob,
		New: func() Object { return &batchv1.CronJob{} }, NewList: func() ObjectList { return &batchv1.CronJobList{} }},
	{GVK: core("PersistentVolume"), Resource: "persistentvolumes", Namespaced: false, Layout: LayoutPersistentVolume,
		New: func() Object { return &corev1.PersistentVolume{} }, NewList: func() ObjectList { return &corev1.PersistentVolumeList{} }},
}

func core(kind string) schema.GroupVersionKind  { return corev1.SchemeGroupVersion.WithKind(kind) }
func apps(kind string) schema.GroupVersionKind  { return appsv1.SchemeGroupVersion.WithKind(kind) }
func batch(kind string) schema.GroupVersionKind { return batchv1.SchemeGroupVersion.WithKind(kind) }

// All returns every reviewed kind, in the order results are reported. The
// slice is the caller's own.
func All() []Kind {
	out := make([]Kind, len(table))
	for i, k := range table {
		k.Subresources = slices.Clone(k.Subresources)
		out[i] = k
	}
	return out
}

// Lookup returns the reviewed kind of group and kind gk; false when
// pipeguard does not review gk. Any version of a reviewed group and kind
// is reviewed, as the webhook's rules send it.
func Lookup(gk schema.GroupKind) (Kind, bool) {
	for _, k := range table {
		if k.GVK.GroupKind() == gk {
			return k, true
		}
	}
	return Kind{}, false
}

// Reviewed reports whether pipeguard reviews objects of group and kind gk
// for pipe mounts.
func Reviewed(gk schema.GroupKind) bool {
	_, ok := Lookup(gk)
	return ok
}

// byType maps the Go type of each kind's object to its index in table.
var byType = func() map[reflect.Type]int {
	m := make(map[reflect.Type]int, len(table))
	for i, k := range table {
		m[reflect.TypeOf(k.New())] = i
	}
	return m
}()

// ForObject returns the reviewed kind of a typed object (a *corev1.Pod, an
// *appsv1.Deployment, ...); false for any other type, nil included.
func ForObject(obj Object) (Kind, bool) {
	if obj == nil {
		return Kind{}, false
	}
	i, ok := byType[reflect.TypeOf(obj)]
	if !ok {
		return Kind{}, false
	}
	return table[i], true
}
