package webhook

import (
	"fmt"

	"k8s.io/apimachinery/pkg/runtime/schema"
)

// subject is what a supported object amounts to for pipe access: a pod spec
// (of a pod or of a workload's pod template) or a PersistentVolume.
type subject struct {
	name string
	// spec is nil for a PersistentVolume and for a ReplicationController
	// without a template.
	spec *podSpec
	pv   *persistentVolumeObject
}

// Supported reports whether the handler reviews objects of this group and
// kind for pipe mounts. Everything else is admitted untouched (Namespaces
// have their own review).
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
		return decodeAs(raw, (*reader).podObject, func(o *podObject) *subject {
			return &subject{name: o.Metadata.Name, spec: &o.Spec}
		})
	case schema.GroupKind{Kind: "PodTemplate"}:
		return decodeAs(raw, (*reader).podTemplateObject, func(o *podTemplateObject) *subject {
			return &subject{name: o.Metadata.Name, spec: &o.Template.Spec}
		})
	case schema.GroupKind{Kind: "PersistentVolume"}:
		return decodeAs(raw, (*reader).persistentVolumeObject, func(o *persistentVolumeObject) *subject {
			return &subject{name: o.Metadata.Name, pv: o}
		})
	case schema.GroupKind{Group: "batch", Kind: "CronJob"}:
		return decodeAs(raw, (*reader).cronJobObject, func(o *cronJobObject) *subject {
			return &subject{name: o.Metadata.Name, spec: &o.Spec.JobTemplate.Spec.Template.Spec}
		})
	case schema.GroupKind{Kind: "ReplicationController"},
		schema.GroupKind{Group: "apps", Kind: "Deployment"}, schema.GroupKind{Group: "apps", Kind: "ReplicaSet"},
		schema.GroupKind{Group: "apps", Kind: "StatefulSet"}, schema.GroupKind{Group: "apps", Kind: "DaemonSet"},
		schema.GroupKind{Group: "batch", Kind: "Job"}:
		return decodeAs(raw, (*reader).templatedObject, func(o *templatedObject) *subject {
			s := &subject{name: o.Metadata.Name}
			if o.Spec.Template != nil {
				s.spec = &o.Spec.Template.Spec
			}
			return s
		})
	}
	return nil, fmt.Errorf("kind %s is not reviewed", gk)
}

// decodeAs reads raw as a T and makes the subject of it.
func decodeAs[T any](raw []byte, read func(*reader, *T), subj func(*T) *subject) (*subject, error) {
	var o T
	if err := decodeObject(raw, func(r *reader) { read(r, &o) }); err != nil {
		return nil, err
	}
	return subj(&o), nil
}
