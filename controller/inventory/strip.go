package inventory

import (
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Strip returns a copy of obj that keeps only what the admission facts
// read: name, namespace, UID and resourceVersion; of a pod spec, its host
// path volumes and claim volumes, each container's name, volume mounts and
// the privileged and hostProcess settings (the containers only where such a
// volume or a HostProcess setting makes them matter), the ServiceAccount
// and the pod's hostProcess setting, and each container's image where a
// HostProcess setting makes it matter (the rule vulnerable-csi-proxy reads
// it); of a PersistentVolume, its host path or local path; of a
// PersistentVolumeClaim, the PersistentVolume it is bound to.
// Everything else (status, annotations, managed fields, other pods' images,
// env, resources) is dropped, so that a cache of every pod in a large cluster
// stays small. Admission decides the same on the stripped object as on the
// whole one. It is a controller-runtime cache TransformFunc; objects of
// other types pass through unchanged. Every reviewed kind has a case
// (TestEveryKindIsStripped checks).
func Strip(obj any) (any, error) {
	switch o := obj.(type) {
	case *corev1.Pod:
		return &corev1.Pod{ObjectMeta: stripMeta(o.ObjectMeta), Spec: stripPodSpec(&o.Spec)}, nil
	case *corev1.PodTemplate:
		return &corev1.PodTemplate{ObjectMeta: stripMeta(o.ObjectMeta), Template: stripTemplate(&o.Template)}, nil
	case *corev1.ReplicationController:
		out := &corev1.ReplicationController{ObjectMeta: stripMeta(o.ObjectMeta)}
		if o.Spec.Template != nil {
			t := stripTemplate(o.Spec.Template)
			out.Spec.Template = &t
		}
		return out, nil
	case *appsv1.Deployment:
		out := &appsv1.Deployment{ObjectMeta: stripMeta(o.ObjectMeta)}
		out.Spec.Template = stripTemplate(&o.Spec.Template)
		return out, nil
	case *appsv1.ReplicaSet:
		out := &appsv1.ReplicaSet{ObjectMeta: stripMeta(o.ObjectMeta)}
		out.Spec.Template = stripTemplate(&o.Spec.Template)
		return out, nil
	case *appsv1.StatefulSet:
		out := &appsv1.StatefulSet{ObjectMeta: stripMeta(o.ObjectMeta)}
		out.Spec.Template = stripTemplate(&o.Spec.Template)
		return out, nil
	case *appsv1.DaemonSet:
		out := &appsv1.DaemonSet{ObjectMeta: stripMeta(o.ObjectMeta)}
		out.Spec.Template = stripTemplate(&o.Spec.Template)
		return out, nil
	case *batchv1.Job:
		out := &batchv1.Job{ObjectMeta: stripMeta(o.ObjectMeta)}
		out.Spec.Template = stripTemplate(&o.Spec.Template)
		return out, nil
	case *batchv1.CronJob:
		out := &batchv1.CronJob{ObjectMeta: stripMeta(o.ObjectMeta)}
		out.Spec.JobTemplate.Spec.Template = stripTemplate(&o.Spec.JobTemplate.Spec.Template)
		return out, nil
	case *corev1.PersistentVolumeClaim:
		// Only which PersistentVolume it is bound to (ClaimsFrom).
		return &corev1.PersistentVolumeClaim{ObjectMeta: stripMeta(o.ObjectMeta), Spec: corev1.PersistentVolumeClaimSpec{VolumeName: o.Spec.VolumeName}}, nil
	case *corev1.PersistentVolume:
		out := &corev1.PersistentVolume{ObjectMeta: stripMeta(o.ObjectMeta)}
		if hp := o.Spec.HostPath; hp != nil {
			out.Spec.HostPath = &corev1.HostPathVolumeSource{Path: hp.Path}
		}
		if l := o.Spec.Local; l != nil {
			out.Spec.Local = &corev1.LocalVolumeSource{Path: l.Path}
		}
		return out, nil
	}
	return obj, nil
}

func stripMeta(m metav1.ObjectMeta) metav1.ObjectMeta {
	return metav1.ObjectMeta{Name: m.Name, Namespace: m.Namespace, UID: m.UID, ResourceVersion: m.ResourceVersion, Generation: m.Generation}
}

func stripTemplate(t *corev1.PodTemplateSpec) corev1.PodTemplateSpec {
	return corev1.PodTemplateSpec{Spec: stripPodSpec(&t.Spec)}
}

func stripPodSpec(s *corev1.PodSpec) corev1.PodSpec {
	out := corev1.PodSpec{ServiceAccountName: s.ServiceAccountName, DeprecatedServiceAccount: s.DeprecatedServiceAccount}
	if sc := s.SecurityContext; sc != nil && sc.WindowsOptions != nil && sc.WindowsOptions.HostProcess != nil {
		out.SecurityContext = &corev1.PodSecurityContext{WindowsOptions: &corev1.WindowsSecurityContextOptions{HostProcess: sc.WindowsOptions.HostProcess}}
	}
	for _, v := range s.Volumes {
		switch {
		case v.HostPath != nil:
			out.Volumes = append(out.Volumes, corev1.Volume{Name: v.Name, VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: v.HostPath.Path}}})
		case v.PersistentVolumeClaim != nil:
			// It may be bound to a PersistentVolume that reaches a pipe.
			out.Volumes = append(out.Volumes, corev1.Volume{Name: v.Name, VolumeSource: corev1.VolumeSource{
				PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: v.PersistentVolumeClaim.ClaimName}}})
		}
	}
	hp := hostProcess(s)
	if len(out.Volumes) == 0 && !hp {
		// No host path or claim volume and no HostProcess container:
		// nothing that could reach a pipe.
		return out
	}
	// Only a HostProcess container's fact carries its image.
	image := func(img string) string {
		if hp {
			return img
		}
		return ""
	}
	for i := range s.InitContainers {
		c := &s.InitContainers[i]
		out.InitContainers = append(out.InitContainers, stripContainer(c.Name, image(c.Image), c.VolumeMounts, c.SecurityContext))
	}
	for i := range s.Containers {
		c := &s.Containers[i]
		out.Containers = append(out.Containers, stripContainer(c.Name, image(c.Image), c.VolumeMounts, c.SecurityContext))
	}
	for i := range s.EphemeralContainers {
		c := &s.EphemeralContainers[i].EphemeralContainerCommon
		sc := stripContainer(c.Name, image(c.Image), c.VolumeMounts, c.SecurityContext)
		out.EphemeralContainers = append(out.EphemeralContainers, corev1.EphemeralContainer{EphemeralContainerCommon: corev1.EphemeralContainerCommon{
			Name: sc.Name, Image: sc.Image, VolumeMounts: sc.VolumeMounts, SecurityContext: sc.SecurityContext,
		}})
	}
	return out
}

func stripContainer(name, image string, mounts []corev1.VolumeMount, sc *corev1.SecurityContext) corev1.Container {
	c := corev1.Container{Name: name, Image: image}
	for _, m := range mounts {
		c.VolumeMounts = append(c.VolumeMounts, corev1.VolumeMount{Name: m.Name, ReadOnly: m.ReadOnly, SubPath: m.SubPath, SubPathExpr: m.SubPathExpr})
	}
	if sc != nil && (sc.Privileged != nil || sc.WindowsOptions != nil && sc.WindowsOptions.HostProcess != nil) {
		c.SecurityContext = &corev1.SecurityContext{Privileged: sc.Privileged}
		if sc.WindowsOptions != nil && sc.WindowsOptions.HostProcess != nil {
			c.SecurityContext.WindowsOptions = &corev1.WindowsSecurityContextOptions{HostProcess: sc.WindowsOptions.HostProcess}
		}
	}
	return c
}

// hostProcess reports whether the pod or any of its containers sets
// windowsOptions.hostProcess to true: such a container reaches every host
// pipe without a mount.
func hostProcess(s *corev1.PodSpec) bool {
	set := func(w *corev1.WindowsSecurityContextOptions) bool {
		return w != nil && w.HostProcess != nil && *w.HostProcess
	}
	if s.SecurityContext != nil && set(s.SecurityContext.WindowsOptions) {
		return true
	}
	for _, list := range [][]corev1.Container{s.InitContainers, s.Containers} {
		for i := range list {
			if sc := list[i].SecurityContext; sc != nil && set(sc.WindowsOptions) {
				return true
			}
		}
	}
	for i := range s.EphemeralContainers {
		if sc := s.EphemeralContainers[i].SecurityContext; sc != nil && set(sc.WindowsOptions) {
			return true
		}
	}
	return false
}
