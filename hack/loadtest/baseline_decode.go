package main

import (
	"fmt"

	"k8s.io/apimachinery/pkg/runtime/schema"
	kjson "sigs.k8s.io/json"
)

// The baseline decodes only the fields it reads, case-sensitively, as
// pipeguard's handler does, so that decoding costs the two the same. The
// types mirror the k8s.io/api fields and JSON names.

type podSpec struct {
	Volumes             []volume         `json:"volumes"`
	InitContainers      []container      `json:"initContainers"`
	Containers          []container      `json:"containers"`
	EphemeralContainers []container      `json:"ephemeralContainers"`
	SecurityContext     *securityContext `json:"securityContext"`
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
	SubPath     string `json:"subPath"`
	SubPathExpr string `json:"subPathExpr"`
}

// securityContext serves for pods (which have no privileged) and containers.
type securityContext struct {
	Privileged     *bool `json:"privileged"`
	WindowsOptions *struct {
		HostProcess *bool `json:"hostProcess"`
	} `json:"windowsOptions"`
}

type template struct {
	Spec podSpec `json:"spec"`
}

type persistentVolume struct {
	Metadata struct {
		Name string `json:"name"`
	} `json:"metadata"`
	Spec struct {
		HostPath *pathOnly `json:"hostPath"`
		Local    *pathOnly `json:"local"`
	} `json:"spec"`
}

// decodeSpec returns the pod spec of an object of kind gk, or for a
// PersistentVolume the volume. Both are nil for a ReplicationController
// without a template.
func decodeSpec(gk schema.GroupKind, raw []byte) (*podSpec, *persistentVolume, error) {
	var obj any
	var found *podSpec
	switch gk.Kind {
	case "Pod":
		var o struct {
			Spec podSpec `json:"spec"`
		}
		obj, found = &o, &o.Spec
	case "PodTemplate":
		var o struct {
			Template template `json:"template"`
		}
		obj, found = &o, &o.Template.Spec
	case "CronJob":
		var o struct {
			Spec struct {
				JobTemplate struct {
					Spec struct {
						Template template `json:"template"`
					} `json:"spec"`
				} `json:"jobTemplate"`
			} `json:"spec"`
		}
		obj, found = &o, &o.Spec.JobTemplate.Spec.Template.Spec
	case "PersistentVolume":
		var pv persistentVolume
		err := kjson.UnmarshalCaseSensitivePreserveInts(raw, &pv)
		return nil, &pv, err
	case "ReplicationController", "Deployment", "ReplicaSet", "StatefulSet", "DaemonSet", "Job":
		var o struct {
			Spec struct {
				Template *template `json:"template"`
			} `json:"spec"`
		}
		if err := kjson.UnmarshalCaseSensitivePreserveInts(raw, &o); err != nil || o.Spec.Template == nil {
			return nil, nil, err
		}
		return &o.Spec.Template.Spec, nil, nil
	default:
		return nil, nil, fmt.Errorf("kind %s is not reviewed", gk)
	}
	if err := kjson.UnmarshalCaseSensitivePreserveInts(raw, obj); err != nil {
		return nil, nil, err
	}
	return found, nil, nil
}
