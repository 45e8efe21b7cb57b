package webhook

import (
	"strconv"

	"github.com/pipeguard/pipeguard/pipepath"
	"github.com/pipeguard/pipeguard/policy"
)

// hostVolume is a pod volume backed by a path on the node.
type hostVolume struct {
	source string // "hostPath"
	path   string
	// whole is the facts of a mount of the whole volume (no subPath),
	// classified once for all the containers that mount it.
	whole policy.Mount
}

// podFacts returns the pod-level facts and one mount fact per container ×
// volumeMount that reaches a pipe, or may (pathClass "pipe" or "ambiguous"),
// over containers, init containers and ephemeral containers. Mounts of
// ordinary host directories are not facts: they cannot reach a pipe.
func podFacts(spec *podSpec) (*policy.Pod, []policy.Mount) {
	pod := &policy.Pod{
		ServiceAccountName: effectiveServiceAccount(spec),
		HostProcess:        podHostProcess(spec),
	}
	volumes := map[string]hostVolume{}
	for _, v := range spec.Volumes {
		if v.HostPath != nil {
			volumes[v.Name] = hostVolume{source: "hostPath", path: v.HostPath.Path, whole: pathFacts(v.HostPath.Path, "", "")}
		}
	}
	if len(volumes) == 0 {
		return pod, nil
	}
	var mounts []policy.Mount
	add := func(kind string, c *container) {
		for _, vm := range c.VolumeMounts {
			vol, ok := volumes[vm.Name]
			if !ok {
				continue
			}
			m := vol.whole
			if vm.SubPath != "" || vm.SubPathExpr != "" {
				m = pathFacts(vol.path, vm.SubPath, vm.SubPathExpr)
			}
			if m.PathClass == string(pipepath.NotPipe) {
				continue
			}
			sc := c.SecurityContext
			m.Container = c.Name
			m.ContainerKind = kind
			m.Volume = vm.Name
			m.VolumeSource = vol.source
			m.ReadOnly = vm.ReadOnly
			m.Privileged = sc != nil && sc.Privileged != nil && *sc.Privileged
			m.HostProcess = effectiveHostProcess(sc, pod.HostProcess)
			mounts = append(mounts, m)
		}
	}
	for i := range spec.InitContainers {
		add(policy.KindInitContainer, &spec.InitContainers[i])
	}
	for i := range spec.Containers {
		add(policy.KindContainer, &spec.Containers[i])
	}
	for i := range spec.EphemeralContainers {
		add(policy.KindEphemeralContainer, &spec.EphemeralContainers[i])
	}
	return pod, mounts
}

// pvFacts returns the mount fact of a PersistentVolume whose host path or
// local volume reaches a pipe, or may; nil otherwise.
func pvFacts(pv *persistentVolumeObject) []policy.Mount {
	var source, path string
	switch {
	case pv.Spec.HostPath != nil:
		source, path = "hostPath", pv.Spec.HostPath.Path
	case pv.Spec.Local != nil:
		source, path = "local", pv.Spec.Local.Path
	default:
		return nil
	}
	m := pathFacts(path, "", "")
	if m.PathClass == string(pipepath.NotPipe) {
		return nil
	}
	m.ContainerKind = policy.KindPersistentVolume
	m.Volume = pv.Metadata.Name
	m.VolumeSource = source
	return []policy.Mount{m}
}

// pathFacts classifies the host path a mount reaches. A subPathExpr is
// expanded by the kubelet from the container's environment, which admission
// cannot see: on a volume that is or may hold a pipe it makes the mount
// ambiguous.
func pathFacts(volumePath, subPath, subPathExpr string) policy.Mount {
	raw := volumePath
	if subPath != "" {
		raw = pipepath.JoinSubPath(volumePath, subPath)
	}
	if subPathExpr != "" {
		raw = pipepath.JoinSubPath(volumePath, subPathExpr)
	}
	r := pipepath.ClassifyMount(volumePath, subPath)
	if subPathExpr != "" {
		r = pipepath.Classify(raw)
	}
	if subPathExpr != "" && (r.Class != pipepath.NotPipe || pipepath.Classify(volumePath).Class != pipepath.NotPipe) {
		r = pipepath.Result{Class: pipepath.Ambiguous, Normalized: r.Normalized,
			Reason: "subPathExpr " + strconv.Quote(subPathExpr) + " is expanded on the node, so the pipe it names is unknown at admission"}
	}
	return policy.Mount{
		RawPath:         raw,
		Path:            r.Normalized,
		PathClass:       string(r.Class),
		Pipe:            r.Pipe,
		AmbiguousReason: r.Reason,
	}
}

// effectiveServiceAccount is the ServiceAccount the pod runs as.
func effectiveServiceAccount(spec *podSpec) string {
	switch {
	case spec.ServiceAccountName != "":
		return spec.ServiceAccountName
	case spec.DeprecatedServiceAccount != "":
		return spec.DeprecatedServiceAccount
	}
	return "default"
}

func podHostProcess(spec *podSpec) bool {
	sc := spec.SecurityContext
	return sc != nil && sc.WindowsOptions != nil && sc.WindowsOptions.HostProcess != nil && *sc.WindowsOptions.HostProcess
}

// effectiveHostProcess applies the container's own windowsOptions.hostProcess
// when set, else the pod's.
func effectiveHostProcess(sc *securityContext, pod bool) bool {
	if sc != nil && sc.WindowsOptions != nil && sc.WindowsOptions.HostProcess != nil {
		return *sc.WindowsOptions.HostProcess
	}
	return pod
}
