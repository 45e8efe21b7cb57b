package webhook

import (
	"github.com/pipeguard/pipeguard/pipepath"
	"github.com/pipeguard/pipeguard/policy"
	"github.com/pipeguard/pipeguard/webhook/decode"
)

// HostProcessSource is the volumeSource of the fact that stands for a
// HostProcess container's reach: it opens host pipes by their path, needs
// no mount for it, and cannot mount a named pipe at all.
const HostProcessSource = "hostProcess"

// hostProcessReason is the ambiguousReason of that fact.
const hostProcessReason = "a HostProcess container reaches every host pipe by its path, without a mount"

// hostProcessFacts returns one fact per HostProcess container of the pod
// (its own windowsOptions.hostProcess, else the pod's), over containers,
// init containers and ephemeral containers. Each is an ambiguous path: it
// could name any protected pipe, so every policy in force protects it and
// only an allowance all of them grant (HostProcess, by default, or the
// namespace) lets it through.
//
// More than MaxHostProcessContainers such containers get an overBoundError:
// each is a fact the rules decide on.
func hostProcessFacts(spec *decode.PodSpec, pod *policy.Pod) ([]policy.Mount, error) {
	var out []policy.Mount
	add := func(kind string, c *decode.Container) {
		if !effectiveHostProcess(c.SecurityContext, pod.HostProcess) {
			return
		}
		sc := c.SecurityContext
		out = append(out, policy.Mount{
			Container:       c.Name,
			ContainerKind:   kind,
			VolumeSource:    HostProcessSource,
			PathClass:       string(pipepath.Ambiguous),
			AmbiguousReason: hostProcessReason,
			Privileged:      sc != nil && sc.Privileged != nil && *sc.Privileged,
			HostProcess:     true,
			Image:           c.Image,
		})
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
	if len(out) > MaxHostProcessContainers {
		return nil, &overBoundError{what: "HostProcess containers", count: len(out), max: MaxHostProcessContainers,
			remedy: "split the pod's work across pods"}
	}
	return out, nil
}
