package webhook

import (
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	kjson "sigs.k8s.io/json"
)

// subject is what a supported object amounts to for pipe access: a pod spec
// (of a pod or of a workload's pod template) or a PersistentVolume.
type subject struct {
	meta *metav1.ObjectMeta
	// spec is nil for a PersistentVolume and for a ReplicationController
	// without a template.
	spec *corev1.PodSpec
	pv   *corev1.PersistentVolume
}

// Supported reports whether the handler reviews objects of this group and
// kind. Everything else is admitted untouched.
func Supported(gk schema.GroupKind) bool {
	switch gk {
	case schema.GroupKind{Kind: "Pod"}, schema.GroupKind{Kind: "PodTemplate"},
		schema.GroupKind{Kind: "ReplicationController"}, schema.GroupKind{Kind: "PersistentVolume"},
		schema.GroupKind{Group: "apps", Kind: "Deployment"}, schema.GroupKind{Group: "apps", Kind: "ReplicaSet"},
		schema.GroupKind{Group: "apps", Kind: "StatefulSet"}, schema.GroupKind{Group: "apps", Kind: "DaemonSet"},
		schema.GroupKind{Group: "batch", Kind: "Job"}, schema.GroupKind{Group: "batch", Kind: "CronJob"}:
		return true
	}
	return false
}

// extract decodes raw as an object of kind gk. Field names are matched
// case-sensitively, as the API server does, so that a key spelled
// "HostPath" cannot mean one thing to pipeguard and another to Kubernetes.
func extract(gk schema.GroupKind, raw []byte) (*subject, error) {
	switch gk {
	case schema.GroupKind{Kind: "Pod"}:
		var o corev1.Pod
		return decode(raw, &o, func() *subject { return &subject{meta: &o.ObjectMeta, spec: &o.Spec} })
	case schema.GroupKind{Kind: "PodTemplate"}:
		var o corev1.PodTemplate
		return decode(raw, &o, func() *subject { return &subject{meta: &o.ObjectMeta, spec: &o.Template.Spec} })
	case schema.GroupKind{Kind: "ReplicationController"}:
		var o corev1.ReplicationController
		return decode(raw, &o, func() *subject {
			s := &subject{meta: &o.ObjectMeta}
			if o.Spec.Template != nil {
				s.spec = &o.Spec.Template.Spec
			}
			return s
		})
	case schema.GroupKind{Kind: "PersistentVolume"}:
		var o corev1.PersistentVolume
		return decode(raw, &o, func() *subject { return &subject{meta: &o.ObjectMeta, pv: &o} })
	case schema.GroupKind{Group: "apps", Kind: "Deployment"}:
		var o appsv1.Deployment
		return decode(raw, &o, func() *subject { return &subject{meta: &o.ObjectMeta, spec: &o.Spec.Template.Spec} })
	case schema.GroupKind{Group: "apps", Kind: "ReplicaSet"}:
		var o appsv1.ReplicaSet
		return decode(raw, &o, func() *subject { return &subject{meta: &o.ObjectMeta, spec: &o.Spec.Template.Spec} })
	case schema.GroupKind{Group: "apps", Kind: "StatefulSet"}:
		var o appsv1.StatefulSet
		return decode(raw, &o, func() *subject { return &subject{meta: &o.ObjectMeta, spec: &o.Spec.Template.Spec} })
	case schema.GroupKind{Group: "apps", Kind: "DaemonSet"}:
		var o appsv1.DaemonSet
		return decode(raw, &o, func() *subject { return &subject{meta: &o.ObjectMeta, spec: &o.Spec.Template.Spec} })
	case schema.GroupKind{Group: "batch", Kind: "Job"}:
		var o batchv1.Job
		return decode(raw, &o, func() *subject { return &subject{meta: &o.ObjectMeta, spec: &o.Spec.Template.Spec} })
	case schema.GroupKind{Group: "batch", Kind: "CronJob"}:
		var o batchv1.CronJob
		return decode(raw, &o, func() *subject {
			return &subject{meta: &o.ObjectMeta, spec: &o.Spec.JobTemplate.Spec.Template.Spec}
		})
	}
	return nil, fmt.Errorf("kind %s is not reviewed", gk)
}

func decode(raw []byte, into any, done func() *subject) (*subject, error) {
	if err := kjson.UnmarshalCaseSensitivePreserveInts(raw, into); err != nil {
		return nil, err
	}
	return done(), nil
}
