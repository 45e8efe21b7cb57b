package controller

import (
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// listTypes makes the list type of each kind the audit reads.
var listTypes = map[string]func() client.ObjectList{
	"Pod":                   func() client.ObjectList { return &corev1.PodList{} },
	"PodTemplate":           func() client.ObjectList { return &corev1.PodTemplateList{} },
	"ReplicationController": func() client.ObjectList { return &corev1.ReplicationControllerList{} },
	"Deployment":            func() client.ObjectList { return &appsv1.DeploymentList{} },
	"ReplicaSet":            func() client.ObjectList { return &appsv1.ReplicaSetList{} },
	"StatefulSet":           func() client.ObjectList { return &appsv1.StatefulSetList{} },
	"DaemonSet":             func() client.ObjectList { return &appsv1.DaemonSetList{} },
	"Job":                   func() client.ObjectList { return &batchv1.JobList{} },
	"CronJob":               func() client.ObjectList { return &batchv1.CronJobList{} },
	"PersistentVolume":      func() client.ObjectList { return &corev1.PersistentVolumeList{} },
}

// itemsOf returns the objects of a typed list.
func itemsOf(list client.ObjectList) ([]client.Object, error) {
	objs, err := meta.ExtractList(list)
	if err != nil {
		return nil, fmt.Errorf("audit: reading %T: %w", list, err)
	}
	out := make([]client.Object, 0, len(objs))
	for _, o := range objs {
		co, ok := o.(client.Object)
		if !ok {
			return nil, fmt.Errorf("audit: %T in %T is not an object", o, list)
		}
		out = append(out, co)
	}
	return out, nil
}
