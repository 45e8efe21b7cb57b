package webhook

// The handler decodes only the fields it reads. Decoding whole Kubernetes
// objects costs more than deciding on them; these types mirror the
// corresponding k8s.io/api fields and JSON names exactly, and the handler
// tests encode real k8s.io/api objects to check that they do.

type objectMeta struct {
	Name string `json:"name"`
}

type podSpec struct {
	Volumes                  []volume            `json:"volumes"`
	InitContainers           []container         `json:"initContainers"`
	Containers               []container         `json:"containers"`
	EphemeralContainers      []container         `json:"ephemeralContainers"`
	ServiceAccountName       string              `json:"serviceAccountName"`
	DeprecatedServiceAccount string              `json:"serviceAccount"`
	SecurityContext          *podSecurityContext `json:"securityContext"`
}

type volume struct {
	Name     string    `json:"name"`
	HostPath *pathOnly `json:"hostPath"`
}

type pathOnly struct {
	Path string `json:"path"`
}

type container struct {
	Name            string           `json:"name"`
	VolumeMounts    []volumeMount    `json:"volumeMounts"`
	SecurityContext *securityContext `json:"securityContext"`
}

type volumeMount struct {
	Name        string `json:"name"`
	ReadOnly    bool   `json:"readOnly"`
	SubPath     string `json:"subPath"`
	SubPathExpr string `json:"subPathExpr"`
}

type securityContext struct {
	Privileged     *bool           `json:"privileged"`
	WindowsOptions *windowsOptions `json:"windowsOptions"`
}

type podSecurityContext struct {
	WindowsOptions *windowsOptions `json:"windowsOptions"`
}

type windowsOptions struct {
	HostProcess *bool `json:"hostProcess"`
}

type podTemplateSpec struct {
	Spec podSpec `json:"spec"`
}

// The kinds, reduced to the path from the object to its pod spec.

type podObject struct {
	Metadata objectMeta `json:"metadata"`
	Spec     podSpec    `json:"spec"`
}

// templatedObject is a Deployment, ReplicaSet, StatefulSet, DaemonSet, Job
// or ReplicationController (whose template may be absent).
type templatedObject struct {
	Metadata objectMeta `json:"metadata"`
	Spec     struct {
		Template *podTemplateSpec `json:"template"`
	} `json:"spec"`
}

type cronJobObject struct {
	Metadata objectMeta `json:"metadata"`
	Spec     struct {
		JobTemplate struct {
			Spec struct {
				Template podTemplateSpec `json:"template"`
			} `json:"spec"`
		} `json:"jobTemplate"`
	} `json:"spec"`
}

type podTemplateObject struct {
	Metadata objectMeta      `json:"metadata"`
	Template podTemplateSpec `json:"template"`
}

type persistentVolumeObject struct {
	Metadata objectMeta `json:"metadata"`
	Spec     struct {
		HostPath *pathOnly `json:"hostPath"`
		Local    *pathOnly `json:"local"`
	} `json:"spec"`
}
