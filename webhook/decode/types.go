package decode

// These types mirror the corresponding k8s.io/api fields and JSON names
// exactly; the webhook's handler tests encode real k8s.io/api objects to
// check that they do. Their json tags are what FuzzDecodeMatchesJSON checks
// the reader against.

// ObjectMeta is the part of an object's metadata that is reviewed.
type ObjectMeta struct {
	Name string `json:"name"`
}

// PodSpec is the part of a pod spec that decides pipe access.
type PodSpec struct {
	Volumes                  []Volume            `json:"volumes"`
	InitContainers           []Container         `json:"initContainers"`
	Containers               []Container         `json:"containers"`
	EphemeralContainers      []Container         `json:"ephemeralContainers"`
	ServiceAccountName       string              `json:"serviceAccountName"`
	DeprecatedServiceAccount string              `json:"serviceAccount"`
	SecurityContext          *PodSecurityContext `json:"securityContext"`
}

// Volume is a pod volume; only host path volumes, and claims that may be
// bound to a host path PersistentVolume, matter.
type Volume struct {
	Name                  string       `json:"name"`
	HostPath              *PathSource  `json:"hostPath"`
	PersistentVolumeClaim *ClaimSource `json:"persistentVolumeClaim"`
}

// ClaimSource is a persistentVolumeClaim volume source.
type ClaimSource struct {
	ClaimName string `json:"claimName"`
}

// PathSource is a hostPath or local volume source: a path on the node.
type PathSource struct {
	Path string `json:"path"`
}

// Container is a container, init container or ephemeral container.
type Container struct {
	Name            string           `json:"name"`
	Image           string           `json:"image"`
	VolumeMounts    []VolumeMount    `json:"volumeMounts"`
	SecurityContext *SecurityContext `json:"securityContext"`
}

// VolumeMount is one volume mounted into a container.
type VolumeMount struct {
	Name        string `json:"name"`
	ReadOnly    bool   `json:"readOnly"`
	SubPath     string `json:"subPath"`
	SubPathExpr string `json:"subPathExpr"`
}

// SecurityContext is a container's security context.
type SecurityContext struct {
	Privileged     *bool           `json:"privileged"`
	WindowsOptions *WindowsOptions `json:"windowsOptions"`
}

// PodSecurityContext is a pod's security context.
type PodSecurityContext struct {
	WindowsOptions *WindowsOptions `json:"windowsOptions"`
}

// WindowsOptions are the Windows settings of a pod or container.
type WindowsOptions struct {
	HostProcess *bool `json:"hostProcess"`
}

// PodTemplateSpec is a workload's pod template.
type PodTemplateSpec struct {
	Spec PodSpec `json:"spec"`
}

// Pod is a core/v1 Pod.
type Pod struct {
	Metadata ObjectMeta `json:"metadata"`
	Spec     PodSpec    `json:"spec"`
}

// Workload is a Deployment, ReplicaSet, StatefulSet, DaemonSet, Job or
// ReplicationController (whose template may be absent).
type Workload struct {
	Metadata ObjectMeta `json:"metadata"`
	Spec     struct {
		Template *PodTemplateSpec `json:"template"`
	} `json:"spec"`
}

// CronJob is a batch/v1 CronJob.
type CronJob struct {
	Metadata ObjectMeta `json:"metadata"`
	Spec     struct {
		JobTemplate struct {
			Spec struct {
				Template PodTemplateSpec `json:"template"`
			} `json:"spec"`
		} `json:"jobTemplate"`
	} `json:"spec"`
}

// PodTemplate is a core/v1 PodTemplate.
type PodTemplate struct {
	Metadata ObjectMeta      `json:"metadata"`
	Template PodTemplateSpec `json:"template"`
}

// PersistentVolume is a core/v1 PersistentVolume, reduced to the volume
// sources that are paths on the node.
type PersistentVolume struct {
	Metadata ObjectMeta `json:"metadata"`
	Spec     struct {
		HostPath *PathSource `json:"hostPath"`
		Local    *PathSource `json:"local"`
	} `json:"spec"`
}
