package confine

import (
	"context"
	"fmt"
	"strings"
)

// The kubelet keeps each pod's files in <kubelet>/pods/<pod uid>/: its
// volumes, container logs and state, etc-hosts. A link placed there is
// followed by the kubelet and the container runtime on the pod's behalf, so
// a link into another pod's directory, or out of one pod's into another's,
// hands one pod's files to another. The one link a CSI node plugin makes in
// a pod's directory, for a workload pod and not its own, is the publish
// path of a CSI volume:
//
//	<kubelet>/pods/<pod uid>/volumes/kubernetes.io~csi/<volume>/mount
//
// leading to the volume's staging path under <kubelet>/plugins.
const podsDir = "pods"

// publishPath is what follows <kubelet>/pods/<pod uid> in a CSI publish
// path; "" stands for the volume's name.
var publishPath = []string{"volumes", "kubernetes.io~csi", "", "mount"}

// CallerKind says what is known of the pod a request comes from.
type CallerKind int

const (
	// CallerUnattributed: the caller could not be placed in a pod or
	// outside every pod. The zero value, and the most restricted.
	CallerUnattributed CallerKind = iota
	// CallerInPod: the caller runs in the pod Caller.Pod.
	CallerInPod
	// CallerOnHost: the caller runs outside every pod, as its platform
	// proves (on Linux, a cgroup that is no pod's).
	CallerOnHost
	// CallerUnidentified: the agent identifies no callers at all (it was
	// assembled without the guard); the caller part of rule pod-link does
	// not apply. pipeguard-agent always identifies its callers.
	CallerUnidentified
)

// Caller is whom a request is attributed to, as rule pod-link needs it.
type Caller struct {
	Kind CallerKind
	// Pod is the caller's pod UID, for CallerInPod.
	Pod string
}

func (c Caller) String() string {
	switch c.Kind {
	case CallerInPod:
		return "the caller runs in pod " + c.Pod
	case CallerOnHost:
		return "the caller runs on the host"
	case CallerUnidentified:
		return "the agent does not identify callers"
	}
	return "the caller could not be attributed to a pod"
}

type callerKey struct{}

// WithCaller returns ctx carrying c, for the host operations that apply
// rule pod-link.
func WithCaller(ctx context.Context, c Caller) context.Context {
	return context.WithValue(ctx, callerKey{}, c)
}

// CallerFrom returns the caller WithCaller put in ctx; a context without
// one is a request of an agent that identifies no callers
// (CallerUnidentified).
func CallerFrom(ctx context.Context) Caller {
	if c, ok := ctx.Value(callerKey{}).(Caller); ok {
		return c
	}
	return Caller{Kind: CallerUnidentified}
}

// RefusePodLinkAt applies rule pod-link to the place of a new link: link
// is the host path where it is created, with its directory resolved, and
// linkPath the path the caller sent. In a pod's directory a link may be
// placed only at that pod's CSI publish path (CSI node plugins publish for
// the workload pods), or by a caller that runs in that pod or on the host.
// The pods directory itself takes a link only from the host.
func (c *Confiner) RefusePodLinkAt(caller Caller, linkPath, link string) error {
	pod, rest, ok := c.podOf(link)
	if !ok || caller.Kind == CallerOnHost || caller.Kind == CallerUnidentified {
		return nil
	}
	if pod == "" {
		return &Refusal{Rule: RulePodLink, Path: linkPath, Reason: fmt.Sprintf(
			"is the pods directory %s, which holds every pod's directory, and %s; only a process on the host may place a link there",
			c.kubeletJoin(podsDir), caller)}
	}
	if c.isPublish(rest) || caller.Kind == CallerInPod && c.sameName(caller.Pod, pod) {
		return nil
	}
	return &Refusal{Rule: RulePodLink, Path: linkPath, Reason: fmt.Sprintf(
		"lies in the directory of pod %s (%s), and %s; a link may be placed in a pod's directory only by that pod, by a process on the host, or at the pod's CSI publish path %s",
		pod, c.kubeletJoin(podsDir, pod), caller, c.kubeletJoin(podsDir, pod, "volumes", "kubernetes.io~csi", "<volume>", "mount"))}
}

// RefusePodLinkTo applies rule pod-link to what a new link leads to:
// source is the host path it points at, resolved, and sourcePath the path
// the caller sent; link is where the link is created. A link may lead into
// a pod's directory only from inside that same pod's directory, whoever
// creates it: the publish link of a CSI volume leads to its staging path,
// outside the pods directory.
func (c *Confiner) RefusePodLinkTo(sourcePath, source, link string) error {
	spod, _, ok := c.podOf(source)
	if !ok {
		return nil
	}
	if lpod, _, in := c.podOf(link); in && spod != "" && lpod != "" && c.sameName(spod, lpod) {
		return nil
	}
	into := fmt.Sprintf("into the directory of pod %s (%s)", spod, c.kubeletJoin(podsDir, spod))
	if spod == "" {
		into = "to the pods directory " + c.kubeletJoin(podsDir)
	}
	return &Refusal{Rule: RulePodLink, Path: sourcePath, Reason: fmt.Sprintf(
		"leads %s; a link may lead into a pod's directory only from inside that same pod's directory, and the new link %s is not there",
		into, Quote(link))}
}

// RefusePodLinkFrom applies RefusePodLinkTo to the source src of a new
// link, by the name its root resolved and by its final path (Handle.Place),
// so that a link the root does not see as one, leading into a pod's
// directory, is not taken for the place it is named by.
func (c *Confiner) RefusePodLinkFrom(sourcePath string, src *Handle, link string) error {
	if err := c.RefusePodLinkTo(sourcePath, src.Abs(), link); err != nil {
		return err
	}
	place, err := src.Place()
	if err != nil {
		return err
	}
	return c.RefusePodLinkTo(sourcePath, place, link)
}

// podOf reports whether abs, a host path, lies in the pods directory of the
// kubelet path (the first root, as configured or resolved): pod is the pod
// UID, "" for the pods directory itself, and rest the names below the
// pod's directory.
func (c *Confiner) podOf(abs string) (pod string, rest []string, ok bool) {
	for _, r := range []string{c.roots[0], c.resolved[0]} {
		if !c.inside(abs, []string{r}) {
			continue
		}
		parts := c.names(c.below(abs, r))
		if len(parts) == 0 || !c.sameName(parts[0], podsDir) {
			continue
		}
		if len(parts) == 1 {
			return "", nil, true
		}
		return parts[1], parts[2:], true
	}
	return "", nil, false
}

// isPublish reports whether rest, the names below a pod's directory, are a
// CSI publish path.
func (c *Confiner) isPublish(rest []string) bool {
	if len(rest) != len(publishPath) {
		return false
	}
	for i, want := range publishPath {
		if want != "" && !c.sameName(rest[i], want) {
			return false
		}
	}
	return true
}

// names splits a name below a root into its components.
func (c *Confiner) names(p string) []string {
	sep := "/"
	if c.flavour == Windows {
		sep = `\`
	}
	var out []string
	for _, n := range strings.Split(p, sep) {
		if n != "" && n != "." {
			out = append(out, n)
		}
	}
	return out
}

// sameName compares one path component as the file system does: exactly
// on Linux, folding ASCII case on Windows (as the roots compare).
func (c *Confiner) sameName(a, b string) bool {
	if c.flavour == Windows {
		return asciiFoldEqual(a, b)
	}
	return a == b
}

// kubeletJoin joins names to the kubelet path, for messages.
func (c *Confiner) kubeletJoin(names ...string) string {
	p := c.roots[0]
	for _, n := range names {
		p = c.join(p, n)
	}
	return p
}
