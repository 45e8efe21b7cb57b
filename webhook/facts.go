package webhook

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	admissionv1 "k8s.io/api/admission/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/pipeguard/pipeguard/internal/kinds"
	"github.com/pipeguard/pipeguard/pipepath"
	"github.com/pipeguard/pipeguard/policy"
	"github.com/pipeguard/pipeguard/webhook/decode"
)

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
		in.Mounts, err = pvFacts(subj.pv)
		if err != nil {
			return nil, factsError(err, req.Kind.Kind, in.Object.Name)
		}
	case subj.spec != nil:
		var claimed map[string]*hostVolume
		claimed, err = h.claimedVolumes(ctx, req.Namespace, subj.spec)
		if err == nil {
			in.Pod, in.Mounts, err = podFacts(ctx, subj.spec, claimed)
		}
		if err == nil {
			var hp []policy.Mount
			hp, err = hostProcessFacts(subj.spec, in.Pod)
			in.Mounts = append(in.Mounts, hp...)
		}
		if err == nil && gk.Kind == "Pod" && req.Operation == admissionv1.Update {
			in.Mounts, err = newMounts(ctx, gk, req.OldObject, in.Mounts, claimed)
		}
		if err != nil {
			return nil, factsError(err, req.Kind.Kind, in.Object.Name)
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

// factsError is err from podFacts or newMounts, on the object kind/name:
// a bound it exceeds (which Decide turns into a denial), or the end of the
// request's context.
func factsError(err error, kind, name string) error {
	var over *overBoundError
	switch {
	case errors.As(err, &over):
		over.kind, over.name = kind, name
		return over
	case errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded):
		return fmt.Errorf("internal error: the review of %s %q ended before a decision (%w); the request is rejected", kind, name, err)
	}
	return err
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
	source string // "hostPath"
	path   string
	// whole is the facts of a mount of the whole volume (no subPath),
	// classified once for all the containers that mount it.
	whole policy.Mount
}

// ctxEvery is how many volumes or mounts facts are built for between
// checks of the request's context: often enough that a review whose caller
// gave up stops within microseconds, seldom enough to cost nothing.
const ctxEvery = 64

// podFacts returns the pod-level facts and one mount fact per container ×
// volumeMount that reaches a pipe, or may (pathClass "pipe" or "ambiguous"),
// over containers, init containers and ephemeral containers. Mounts of
// ordinary host directories are not facts: they cannot reach a pipe. A pod
// spec above MaxHostPathVolumes, MaxHostPathMounts or MaxHostPathBytes gets
// an overBoundError,
// before any path is classified; a ctx that ends stops the work. The cost
// is linear in the volumes and mounts.
func podFacts(ctx context.Context, spec *decode.PodSpec, claimed map[string]*hostVolume) (*policy.Pod, []policy.Mount, error) {
	pod := &policy.Pod{
		ServiceAccountName: effectiveServiceAccount(spec),
		HostProcess:        podHostProcess(spec),
	}
	n := len(claimed)
	for _, v := range spec.Volumes {
		if v.HostPath != nil {
			n++
		}
	}
	if n == 0 {
		return pod, nil, nil
	}
	if n > MaxHostPathVolumes {
		return nil, nil, tooManyVolumes(n)
	}
	lists := [...]struct {
		kind       string
		containers []decode.Container
	}{
		{policy.KindInitContainer, spec.InitContainers},
		{policy.KindContainer, spec.Containers},
		{policy.KindEphemeralContainer, spec.EphemeralContainers},
	}
	// The API server rejects two volumes of one name; should a request
	// hold them anyway, the last one counts. Paths are classified only
	// once the mounts are known to be within bounds.
	volumes := make(map[string]*hostVolume, n)
	for i := range spec.Volumes {
		v := &spec.Volumes[i]
		switch c := claimed[v.Name]; {
		case v.HostPath != nil:
			volumes[v.Name] = &hostVolume{source: "hostPath", path: v.HostPath.Path}
		case c != nil && v.PersistentVolumeClaim != nil:
			// A claim bound to a PersistentVolume that reaches a pipe, or
			// may: mounting it mounts that path (claims.go).
			volumes[v.Name] = &hostVolume{source: c.source, path: c.path}
		}
	}
	mountsOfHostPaths, pathBytes := 0, 0
	for _, l := range lists {
		for i := range l.containers {
			for _, vm := range l.containers[i].VolumeMounts {
				if v := volumes[vm.Name]; v != nil {
					mountsOfHostPaths++
					pathBytes += len(v.path) + len(vm.SubPath) + len(vm.SubPathExpr)
				}
			}
		}
	}
	switch {
	case mountsOfHostPaths > MaxHostPathMounts:
		return nil, nil, tooManyMounts(mountsOfHostPaths)
	case pathBytes > MaxHostPathBytes:
		return nil, nil, tooLongPaths(pathBytes, "of host paths over its mounts of hostPath volumes")
	}
	i := 0
	for _, v := range volumes {
		if i++; i%ctxEvery == 0 {
			if err := ctx.Err(); err != nil {
				return nil, nil, err
			}
		}
		v.whole = pathFacts(v.path, "", "")
	}
	var mounts []policy.Mount
	// Pipe mounts are few and large: allocate room for all of them once.
	room := 0
	for _, l := range lists {
		for i := range l.containers {
			for _, vm := range l.containers[i].VolumeMounts {
				if v := volumes[vm.Name]; v != nil && (v.whole.PathClass != string(pipepath.NotPipe) || vm.SubPath != "" || vm.SubPathExpr != "") {
					room++
				}
			}
		}
	}
	seen := 0
	for _, l := range lists {
		for ci := range l.containers {
			c := &l.containers[ci]
			for _, vm := range c.VolumeMounts {
				vol := volumes[vm.Name]
				if vol == nil {
					continue
				}
				if seen++; seen%ctxEvery == 0 {
					if err := ctx.Err(); err != nil {
						return nil, nil, err
					}
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
				m.ContainerKind = l.kind
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
	}
	return pod, mounts, nil
}

// pvFacts returns the mount fact of a PersistentVolume whose host path or
// local volume reaches a pipe, or may; nil otherwise. A path above
// MaxHostPathBytes gets an overBoundError.
func pvFacts(pv *decode.PersistentVolume) ([]policy.Mount, error) {
	var source, path string
	switch {
	case pv.Spec.HostPath != nil:
		source, path = "hostPath", pv.Spec.HostPath.Path
	case pv.Spec.Local != nil:
		source, path = "local", pv.Spec.Local.Path
	default:
		return nil, nil
	}
	if len(path) > MaxHostPathBytes {
		return nil, tooLongPaths(len(path), "in its "+source+" path")
	}
	m := pathFacts(path, "", "")
	if m.PathClass == string(pipepath.NotPipe) {
		return nil, nil
	}
	m.ContainerKind = policy.KindPersistentVolume
	m.Volume = pv.Metadata.Name
	m.VolumeSource = source
	return []policy.Mount{m}, nil
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
