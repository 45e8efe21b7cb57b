package webhook

import (
	"context"
	"fmt"
	"reflect"
	"slices"
	"strconv"

	admissionv1 "k8s.io/api/admission/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/pipeguard/pipeguard/internal/kinds"
	"github.com/pipeguard/pipeguard/pipepath"
	"github.com/pipeguard/pipeguard/policy"
	"github.com/pipeguard/pipeguard/webhook/decode"
)

// Input returns the facts the handler would give the policy engine for a
// request, or nil when it reviews no such request. Policies are not filled
// in: see policy.Generation.Document.
func (h *Handler) Input(ctx context.Context, req Request) (*policy.Input, error) {
	gk := req.Kind.GroupKind()
	if !Supported(gk) || len(req.Object) == 0 {
		return nil, nil
	}
	return h.input(ctx, gk, req)
}

// input builds the rego input for a supported kind.
func (h *Handler) input(ctx context.Context, gk schema.GroupKind, req Request) (*policy.Input, error) {
	subj, err := extract(gk, req.Object)
	if err != nil {
		return nil, badRequest(fmt.Errorf("cannot decode request.object as %s: %w; send a valid %s", req.Kind, err, req.Kind.Kind))
	}
	in := &policy.Input{
		Version: policy.InputVersion,
		Request: policy.Request{
			UID: req.UID, Operation: string(req.Operation),
			Kind: req.Kind.Kind, Group: req.Kind.Group, Version: req.Kind.Version,
			Resource: req.Resource, SubResource: req.SubResource,
			Namespace: req.Namespace, Name: req.Name,
			Username: req.User.Username, Groups: req.User.Groups,
			DryRun: req.DryRun,
		},
		Object: policy.Object{
			APIVersion: req.Kind.Group + "/" + req.Kind.Version,
			Kind:       req.Kind.Kind, Namespace: req.Namespace, Name: subj.name,
		},
	}
	if req.Kind.Group == "" {
		in.Object.APIVersion = req.Kind.Version
	}
	if in.Object.Name == "" {
		in.Object.Name = req.Name
	}
	switch {
	case subj.pv != nil:
		in.Mounts = pvFacts(subj.pv)
	case subj.spec != nil:
		in.Pod, in.Mounts = podFacts(subj.spec)
		in.Mounts = append(in.Mounts, hostProcessFacts(subj.spec, in.Pod)...)
		if gk.Kind == "Pod" && req.Operation == admissionv1.Update {
			in.Mounts, err = newMounts(gk, req.OldObject, in.Mounts)
			if err != nil {
				return nil, err
			}
		}
	}
	if len(in.Mounts) == 0 || subj.pv != nil {
		return in, nil
	}
	in.Namespace = &policy.Namespace{Name: req.Namespace, Labels: map[string]string{}}
	if req.Namespace == "" {
		return in, nil
	}
	labels, _, err := h.opts.Namespaces.NamespaceLabels(ctx, req.Namespace)
	if err != nil {
		return nil, fmt.Errorf("internal error: looking up namespace %q: %w", req.Namespace, err)
	}
	if labels != nil {
		in.Namespace.Labels = labels
	}
	return in, nil
}

// newMounts drops the mounts an updated pod already had. A pod's volumes and
// containers cannot change after creation, so on UPDATE only what is new
// (ephemeral containers) needs a decision; re-judging the rest would block
// routine metadata updates of pods admitted under an older policy.
func newMounts(gk schema.GroupKind, oldRaw []byte, mounts []policy.Mount) ([]policy.Mount, error) {
	if len(oldRaw) == 0 {
		return mounts, nil
	}
	old, err := extract(gk, oldRaw)
	if err != nil {
		return nil, badRequest(fmt.Errorf("cannot decode request.oldObject as a Pod: %w", err))
	}
	oldPod, oldMounts := podFacts(old.spec)
	oldMounts = append(oldMounts, hostProcessFacts(old.spec, oldPod)...)
	fresh := mounts[:0:0]
	for _, m := range mounts {
		// The facts of both sides come from podFacts, so equal mounts
		// are deeply equal; a pod has few enough for a linear search.
		if !slices.ContainsFunc(oldMounts, func(o policy.Mount) bool { return reflect.DeepEqual(o, m) }) {
			fresh = append(fresh, m)
		}
	}
	return fresh, nil
}

// subject is what a supported object amounts to for pipe access: a pod spec
// (of a pod or of a workload's pod template) or a PersistentVolume.
type subject struct {
	name string
	// spec is nil for a PersistentVolume and for a ReplicationController
	// without a template.
	spec *decode.PodSpec
	pv   *decode.PersistentVolume
}

// Supported reports whether the handler reviews objects of this group and
// kind for pipe mounts: the kinds of package kinds. Everything else is
// admitted untouched (Namespaces have their own review).
func Supported(gk schema.GroupKind) bool {
	return kinds.Reviewed(gk)
}

// extract decodes raw as an object of kind gk and finds its pod spec or
// host path. Field names are matched case-sensitively, as the API server
// does (see package decode).
func extract(gk schema.GroupKind, raw []byte) (*subject, error) {
	k, ok := kinds.Lookup(gk)
	if !ok {
		return nil, fmt.Errorf("kind %s is not reviewed", gk)
	}
	switch k.Layout {
	case kinds.LayoutPod:
		return decodeAs(raw, func(o *decode.Pod) *subject {
			return &subject{name: o.Metadata.Name, spec: &o.Spec}
		})
	case kinds.LayoutPodTemplate:
		return decodeAs(raw, func(o *decode.PodTemplate) *subject {
			return &subject{name: o.Metadata.Name, spec: &o.Template.Spec}
		})
	case kinds.LayoutPersistentVolume:
		return decodeAs(raw, func(o *decode.PersistentVolume) *subject {
			return &subject{name: o.Metadata.Name, pv: o}
		})
	case kinds.LayoutCronJob:
		return decodeAs(raw, func(o *decode.CronJob) *subject {
			return &subject{name: o.Metadata.Name, spec: &o.Spec.JobTemplate.Spec.Template.Spec}
		})
	case kinds.LayoutWorkload:
		return decodeAs(raw, func(o *decode.Workload) *subject {
			s := &subject{name: o.Metadata.Name}
			if o.Spec.Template != nil {
				s.spec = &o.Spec.Template.Spec
			}
			return s
		})
	}
	return nil, fmt.Errorf("internal error: kind %s has layout %d, which the webhook cannot read", gk, k.Layout)
}

// decodeAs reads raw as a T and makes the subject of it.
func decodeAs[T decode.Kind](raw []byte, subj func(*T) *subject) (*subject, error) {
	o, err := decode.Object[T](raw)
	if err != nil {
		return nil, err
	}
	return subj(o), nil
}

// hostVolume is a pod volume backed by a path on the node.
type hostVolume struct {
	name   string
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
func podFacts(spec *decode.PodSpec) (*policy.Pod, []policy.Mount) {
	pod := &policy.Pod{
		ServiceAccountName: effectiveServiceAccount(spec),
		HostProcess:        podHostProcess(spec),
	}
	// A pod has few host path volumes: a slice searched in order costs
	// less than a map. The API server rejects two volumes of one name;
	// should a request hold them anyway, the last one counts, as it would
	// in a map.
	n := 0
	for _, v := range spec.Volumes {
		if v.HostPath != nil {
			n++
		}
	}
	if n == 0 {
		return pod, nil
	}
	volumes := make([]hostVolume, 0, n)
	for _, v := range spec.Volumes {
		if v.HostPath != nil {
			volumes = append(volumes, hostVolume{name: v.Name, source: "hostPath", path: v.HostPath.Path, whole: pathFacts(v.HostPath.Path, "", "")})
		}
	}
	volume := func(name string) *hostVolume {
		for i := len(volumes) - 1; i >= 0; i-- {
			if volumes[i].name == name {
				return &volumes[i]
			}
		}
		return nil
	}
	var mounts []policy.Mount
	// Pipe mounts are few and large: allocate room for all of them once.
	room := 0
	for _, list := range [][]decode.Container{spec.InitContainers, spec.Containers, spec.EphemeralContainers} {
		for i := range list {
			for _, vm := range list[i].VolumeMounts {
				if v := volume(vm.Name); v != nil && (v.whole.PathClass != string(pipepath.NotPipe) || vm.SubPath != "" || vm.SubPathExpr != "") {
					room++
				}
			}
		}
	}
	add := func(kind string, c *decode.Container) {
		for _, vm := range c.VolumeMounts {
			vol := volume(vm.Name)
			if vol == nil {
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
			if mounts == nil {
				mounts = make([]policy.Mount, 0, room)
			}
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
func pvFacts(pv *decode.PersistentVolume) []policy.Mount {
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
	var r pipepath.Result
	switch {
	case subPathExpr != "":
		raw = pipepath.JoinSubPath(volumePath, subPathExpr)
		r = pipepath.Classify(raw)
		if r.Class != pipepath.NotPipe || pipepath.Classify(volumePath).Class != pipepath.NotPipe {
			r = pipepath.Result{Class: pipepath.Ambiguous, Normalized: r.Normalized,
				Reason: "subPathExpr " + strconv.Quote(subPathExpr) + " is expanded on the node, so the pipe it names is unknown at admission"}
		}
	default:
		if subPath != "" {
			raw = pipepath.JoinSubPath(volumePath, subPath)
		}
		r = pipepath.ClassifyMount(volumePath, subPath)
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
func effectiveServiceAccount(spec *decode.PodSpec) string {
	switch {
	case spec.ServiceAccountName != "":
		return spec.ServiceAccountName
	case spec.DeprecatedServiceAccount != "":
		return spec.DeprecatedServiceAccount
	}
	return "default"
}

func podHostProcess(spec *decode.PodSpec) bool {
	sc := spec.SecurityContext
	return sc != nil && sc.WindowsOptions != nil && sc.WindowsOptions.HostProcess != nil && *sc.WindowsOptions.HostProcess
}

// effectiveHostProcess applies the container's own windowsOptions.hostProcess
// when set, else the pod's.
func effectiveHostProcess(sc *decode.SecurityContext, pod bool) bool {
	if sc != nil && sc.WindowsOptions != nil && sc.WindowsOptions.HostProcess != nil {
		return *sc.WindowsOptions.HostProcess
	}
	return pod
}
