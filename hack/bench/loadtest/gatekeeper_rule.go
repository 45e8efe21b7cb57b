package main

import (
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/pipeguard/pipeguard/internal/kinds"
	"github.com/pipeguard/pipeguard/policy"
)

// The ConstraintTemplate and the Constraint that state pipeguard's default
// rule for Gatekeeper, and where Gatekeeper runs (POD_NAMESPACE, exempt
// from its own checks), as deployed.
const (
	gatekeeperTemplateName   = "pipeguardcsiproxy"
	gatekeeperConstraintKind = "PipeguardCSIProxy"
	gatekeeperConstraintName = "pipe-mounts"
	gatekeeperNamespace      = "gatekeeper-system"
)

// gatekeeperRego is pipeguard's built-in default rule in Gatekeeper's rego:
// a container (init and ephemeral containers included) may mount a hostPath
// volume whose path names a CSI Proxy pipe (\\.\pipe\csi-proxy*) only when
// it is HostProcess (its own setting, else the pod's), or
// when its namespace has the label pipeguard.io/allow-csi-proxy=true. It
// reads the pod spec of Pods, of workloads' pod templates and of CronJobs'
// job templates, and the namespace's labels from input.review.namespaceObject,
// which Gatekeeper fills from its informer cache of Namespaces. It knows the
// canonical spelling of a pipe path, in any case and with either slash;
// pipeguard also normalizes the others (see pipepath).
const gatekeeperRego = `package pipeguardcsiproxy

violation[{"msg": msg}] {
	not namespace_allowed
	spec := pod_spec
	field := container_fields[_]
	c := object.get(spec, field, [])[_]
	m := object.get(c, "volumeMounts", [])[_]
	v := object.get(spec, "volumes", [])[_]
	v.name == m.name
	pipe_path(v.hostPath.path)
	not host_process(spec, c)
	msg := sprintf("container %v mounts the CSI Proxy pipe %v (volume %v) but is not HostProcess, and namespace %v lacks the label ` + policy.AllowLabel + `=true", [c.name, v.hostPath.path, v.name, input.review.namespace])
}

container_fields := ["containers", "initContainers", "ephemeralContainers"]

namespace_allowed {
	input.review.namespaceObject.metadata.labels["` + policy.AllowLabel + `"] == "true"
}

pod_spec = s {
	input.review.kind.kind == "Pod"
	s := input.review.object.spec
}

pod_spec = s {
	input.review.kind.kind == "CronJob"
	s := input.review.object.spec.jobTemplate.spec.template.spec
}

pod_spec = s {
	not input.review.kind.kind == "Pod"
	not input.review.kind.kind == "CronJob"
	s := input.review.object.spec.template.spec
}

pipe_path(p) {
	startswith(lower(replace(p, "/", "\\")), "\\\\.\\pipe\\csi-proxy")
}

host_process(_, c) {
	c.securityContext.windowsOptions.hostProcess == true
}

host_process(spec, c) {
	not container_sets_host_process(c)
	spec.securityContext.windowsOptions.hostProcess == true
}

container_sets_host_process(c) {
	is_boolean(c.securityContext.windowsOptions.hostProcess)
}
`

// gatekeeperTemplate is the ConstraintTemplate holding gatekeeperRego.
func gatekeeperTemplate() *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "templates.gatekeeper.sh/v1",
		"kind":       "ConstraintTemplate",
		"metadata":   map[string]any{"name": gatekeeperTemplateName},
		"spec": map[string]any{
			"crd": map[string]any{"spec": map[string]any{"names": map[string]any{"kind": gatekeeperConstraintKind}}},
			"targets": []any{map[string]any{
				"target": "admission.k8s.gatekeeper.sh",
				"rego":   gatekeeperRego,
			}},
		},
	}}
}

// constraintKinds is what the Constraint matches, group/Kind: the kinds
// pipeguard reviews (package kinds) whose pod spec the rule reads, Pods,
// workloads and CronJobs.
var constraintKinds = func() []string {
	var out []string
	for _, k := range kinds.All() {
		switch k.Layout {
		case kinds.LayoutPod, kinds.LayoutWorkload, kinds.LayoutCronJob:
			out = append(out, strings.TrimPrefix(k.GVK.Group+"/"+k.GVK.Kind, "/"))
		}
	}
	return out
}()

// gatekeeperConstraint puts the template in force, denying, for
// constraintKinds.
func gatekeeperConstraint() *unstructured.Unstructured {
	var match []any
	for _, k := range constraintKinds {
		i := strings.LastIndex(k, "/") // -1 for the core group
		match = append(match, map[string]any{"apiGroups": []any{k[:max(i, 0)]}, "kinds": []any{k[i+1:]}})
	}
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "constraints.gatekeeper.sh/v1beta1",
		"kind":       gatekeeperConstraintKind,
		"metadata":   map[string]any{"name": gatekeeperConstraintName},
		"spec":       map[string]any{"enforcementAction": "deny", "match": map[string]any{"kinds": match}},
	}}
}
